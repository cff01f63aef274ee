"""The task suite (IsaacGymEnvs task names on our MuJoCo-backed task logic) and the registry
through which tasks written outside the package join it (:mod:`.registry`).

Task modules are imported on first use, so a run pays only for the task it trains.
"""

from __future__ import annotations

from .ant import Ant
from .base import PhysicsFrame, TaskLogic
from .cartpole import Cartpole
from .registry import (
    ENTRY_POINT_GROUP,
    SUITE,
    TaskModuleError,
    UnknownTaskError,
    import_task_modules,
    is_vec_task_class,
    known_tasks,
    register_task,
    unregister_task,
)
from .registry import find_task_class as get_task_class

TASK_MODULES = SUITE  # IsaacGymEnvs task name -> (module under this package, class name)
TASK_NAMES = tuple(SUITE)


__all__ = [
    "ENTRY_POINT_GROUP",
    "SUITE",
    "TASK_MODULES",
    "TASK_NAMES",
    "Ant",
    "Cartpole",
    "PhysicsFrame",
    "TaskLogic",
    "TaskModuleError",
    "UnknownTaskError",
    "get_task_class",
    "import_task_modules",
    "is_vec_task_class",
    "known_tasks",
    "register_task",
    "unregister_task",
]
