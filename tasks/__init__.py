"""The task suite: IsaacGymEnvs task names resolved to our MuJoCo-backed task logic.

Task modules are imported on first use, so a run pays only for the task it trains.
"""

from __future__ import annotations

import importlib

from .ant import Ant
from .base import PhysicsFrame, TaskLogic
from .cartpole import Cartpole

# IsaacGymEnvs task name -> (module under this package, class name)
TASK_MODULES: dict[str, tuple[str, str]] = {
    "Cartpole": ("cartpole", "Cartpole"),
    "Ant": ("ant", "Ant"),
    "Humanoid": ("humanoid", "Humanoid"),
    "Anymal": ("anymal", "Anymal"),
    "BallBalance": ("ball_balance", "BallBalance"),
    "FrankaCabinet": ("franka_cabinet", "FrankaCabinet"),
    "ShadowHand": ("shadow_hand", "ShadowHand"),
}
TASK_NAMES = tuple(TASK_MODULES)


class UnknownTaskError(ValueError):
    pass


def get_task_class(name: str) -> type[TaskLogic]:
    """The task class registered under ``name`` (an IsaacGymEnvs task name)."""
    try:
        module, cls = TASK_MODULES[name]
    except KeyError:
        known = ", ".join(sorted(TASK_MODULES))
        raise UnknownTaskError(f"task={name!r}: unknown task; available: {known}") from None
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


__all__ = [
    "TASK_MODULES",
    "TASK_NAMES",
    "Ant",
    "Cartpole",
    "PhysicsFrame",
    "TaskLogic",
    "UnknownTaskError",
    "get_task_class",
]
