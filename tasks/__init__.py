"""The task suite: IsaacGymEnvs task names resolved to our MuJoCo-backed task logic."""

from .ant import Ant
from .base import PhysicsFrame, TaskLogic
from .cartpole import Cartpole

TASK_MAP: dict[str, type[TaskLogic]] = {cls.name: cls for cls in (Cartpole, Ant)}


class UnknownTaskError(ValueError):
    pass


def get_task_class(name: str) -> type[TaskLogic]:
    """The task class registered under ``name`` (an IsaacGymEnvs task name)."""
    try:
        return TASK_MAP[name]
    except KeyError:
        known = ", ".join(sorted(TASK_MAP))
        raise UnknownTaskError(f"task={name!r}: unknown task; available: {known}") from None


__all__ = ["TASK_MAP", "PhysicsFrame", "TaskLogic", "UnknownTaskError", "get_task_class"]
