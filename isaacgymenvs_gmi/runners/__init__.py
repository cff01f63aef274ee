"""The modes, each a plug-in: what a GMI does once it is placed, bound and joined to its group.
:data:`MODES` maps ``gmi.mode`` to its :class:`~.mode.Mode`; a new mode is a new package beside
``sync_ppo`` exporting ``MODE`` and an entry here. Modes import what they share from
:mod:`.shared`, never from each other.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from isaacgymenvs_gmi.config import ConfigError, GmiConfig
from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.rl.lean_imports import defer_rl_games_test_networks, defer_torch_compiler

defer_rl_games_test_networks()  # before the bodies below import rl-games' trainer
defer_torch_compiler()

from .async_ppo import MODE as ASYNC  # noqa: E402
from .mode import Claim, Mode, ModeFacts, ModeTerms  # noqa: E402
from .pbt import MODE as PBT  # noqa: E402
from .result import RunResult  # noqa: E402
from .serve import MODE as SERVE  # noqa: E402
from .sync_ppo import MODE as SYNC  # noqa: E402

MODES: dict[str, Mode] = {m.name: m for m in (SYNC, ASYNC, SERVE, PBT)}
DEFAULT = MODES[GmiConfig.mode]  # the mode of a run that leaves gmi.mode at its default
PLAYER = SYNC  # test=True plays a checkpoint in one process with rl-games' player: sync's body


def mode_named(name: str) -> Mode:
    """The mode registered as ``gmi.mode=name`` (ConfigError naming the modes there are)."""
    try:
        return MODES[name]
    except KeyError:
        what = "; ".join(f"{m.name}: {m.summary}" for m in MODES.values())
        available = f"available in this version: {', '.join(MODES)} ({what})"
        raise ConfigError("gmi.mode", name, available) from None


def chosen_mode(cfg: Any, name: str) -> Mode:
    """The mode of a run whose ``gmi.mode`` is ``name``: a mode another switch claims
    (``pbt.enabled=True``) where ``gmi.mode`` is the default or names it, else ``name``'s.

    Raises:
        ConfigError: ``name`` is not a mode, or it and a claiming switch disagree (naming
            ``gmi.mode``).
    """
    asked = mode_named(name)
    _refuse_others_groups(cfg, asked)
    for mode in MODES.values():
        if mode.claim is None or not mode.claim.applies(cfg) or asked is mode:
            continue
        if asked is DEFAULT:
            return mode
        claim = mode.claim
        raise ConfigError(
            "gmi.mode",
            name,
            f"{claim.switch} runs as gmi.mode={mode.name} ({mode.summary}); it cannot be combined "
            f"with gmi.mode={asked.name} ({asked.summary}): use gmi.mode={DEFAULT.name} or "
            f"{mode.name}, or {claim.undo}",
        )
    return asked


def _refuse_others_groups(cfg: Any, asked: Mode) -> None:
    """Another mode's own settings must be left at their defaults (they would change nothing)."""
    for mode in MODES.values():
        if not mode.group or mode is asked:
            continue
        given, defaults = mode.settings(cfg), mode.settings({})
        for field in fields(given):
            if getattr(given, field.name) != getattr(defaults, field.name):
                raise ConfigError(
                    f"{mode.group}.{field.name}",
                    getattr(given, field.name),
                    f"is read only by gmi.mode={mode.name} ({mode.summary}); this run is "
                    f"gmi.mode={asked.name}",
                )


def mode_of(plan: RunPlan) -> Mode:
    """The mode that runs ``plan``: its ``gmi.mode``, or the player for ``test=True``."""
    return PLAYER if plan.test else mode_named(plan.mode)


__all__ = [
    "MODES",
    "Claim",
    "Mode",
    "ModeFacts",
    "RunResult",
    "ModeTerms",
    "chosen_mode",
    "mode_named",
    "mode_of",
]
