"""Synchronous PPO (``gmi.mode=sync``): rl-games' PPO in every GMI, in lockstep.
:func:`run_sync_ppo` is the body; heavy imports happen inside it, so a freshly spawned GMI binds
its resources before they load.
"""

from isaacgymenvs_gmi.runners.mode import Mode

from .body import run_sync_ppo

MODE = Mode(
    name="sync",
    summary="synchronous PPO, holistic GMIs in lockstep",
    body=run_sync_ppo,
    records_video=True,
)

__all__ = ["MODE", "run_sync_ppo"]
