"""One GMI body per mode: what a GMI does once it is placed, bound and joined to its group.

A body takes a :class:`~isaacgymenvs_gmi.gmi.context.GmiContext` and returns GMI 0's
:class:`RunResult`. :data:`BODIES` maps ``gmi.mode`` to its body; a new mode is a new entry here
and a new package beside ``sync_ppo``, not a branch in the spine.
"""

from __future__ import annotations

from isaacgymenvs_gmi.gmi.context import Body
from isaacgymenvs_gmi.rl.lean_imports import defer_rl_games_test_networks, defer_torch_compiler

defer_rl_games_test_networks()  # before the bodies below import rl-games' trainer
defer_torch_compiler()

from .async_ppo import run_async_ppo  # noqa: E402
from .result import RunResult  # noqa: E402
from .serve import run_serve  # noqa: E402
from .sync_ppo import run_sync_ppo  # noqa: E402

BODIES: dict[str, Body] = {
    "sync": run_sync_ppo,  # synchronous PPO, holistic GMIs in lockstep
    "async": run_async_ppo,  # A3C/APPO: actor GMIs stream experience to trainer GMIs
    "serve": run_serve,  # every GMI plays the policy (actors only), optionally recording
}


def body_for(mode: str) -> Body:
    """The body registered for ``gmi.mode`` (KeyError naming the modes that have one)."""
    try:
        return BODIES[mode]
    except KeyError:
        raise KeyError(f"no GMI body for mode {mode!r}; available: {', '.join(BODIES)}") from None


__all__ = ["BODIES", "RunResult", "body_for"]
