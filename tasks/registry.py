"""Task names -> task classes: the suite, tasks registered by users, and installed packages.

A task outside this package is made known in one of three ways:

- ``@register_task("MyTask")`` on its class, in a module the run imports: name the module on the
  command line with ``task_modules=[mypkg.tasks]`` (every GMI imports it too);
- an entry point of an installed package in the group ``isaacgymenvs_gmi.tasks``
  (``MyTask = "mypkg.tasks:MyTask"``), loaded when the name is first asked for;
- IsaacGymEnvs' own task map (``isaacgymenvs.tasks.isaacgym_task_map``), when the
  ``isaacgymenvs`` package is importable: its ``VecTask`` classes run as they are.

A task class is a :class:`~.base.TaskLogic` subclass (our simulator-free rules over MuJoCo) or a
class with IsaacGymEnvs' ``VecTask`` interface (a torch env that simulates itself). The lookup
order is: the suite, registered classes, entry points, IsaacGymEnvs.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from importlib import metadata
from typing import TypeVar

from .base import TaskLogic

ENTRY_POINT_GROUP = "isaacgymenvs_gmi.tasks"
# IsaacGymEnvs task name -> (module under this package, class name)
SUITE: dict[str, tuple[str, str]] = {
    "Cartpole": ("cartpole", "Cartpole"),
    "Ant": ("ant", "Ant"),
    "Humanoid": ("humanoid", "Humanoid"),
    "Anymal": ("anymal", "Anymal"),
    "BallBalance": ("ball_balance", "BallBalance"),
    "FrankaCabinet": ("franka_cabinet", "FrankaCabinet"),
    "ShadowHand": ("shadow_hand", "ShadowHand"),
}
_REGISTERED: dict[str, type] = {}
T = TypeVar("T", bound=type)


class UnknownTaskError(ValueError):
    pass


class TaskModuleError(ImportError):
    """A module named in ``task_modules`` that cannot be imported."""

    def __init__(self, module: str, cause: BaseException) -> None:
        self.module, self.cause = module, cause
        super().__init__(f"task_modules: {module!r} cannot be imported: {cause}")


def register_task(name: str, cls: T | None = None) -> T | Callable[[T], T]:
    """Make task class ``cls`` known as ``name`` (the task file's ``name:``).

    Usable as a call, ``register_task("MyTask", MyTask)``, or as a decorator,
    ``@register_task("MyTask")``. The class is a :class:`~.base.TaskLogic` subclass or a class
    with IsaacGymEnvs' ``VecTask`` interface. A suite name, or a name already taken by another
    class, is refused."""

    def add(task_cls: T) -> T:
        if not isinstance(name, str) or not name:
            raise ValueError(f"register_task: the task name must be a non-empty string: {name!r}")
        if name in SUITE:
            raise ValueError(f"register_task: {name!r} is a task of the suite; pick another name")
        logic = isinstance(task_cls, type) and issubclass(task_cls, TaskLogic)
        if not logic and not is_vec_task_class(task_cls):
            raise TypeError(
                f"register_task: {task_cls!r} is neither a TaskLogic subclass nor a class with "
                "IsaacGymEnvs' VecTask interface (step, reset)"
            )
        known = _REGISTERED.get(name)
        if known is not None and _qualified(known) != _qualified(task_cls):
            raise ValueError(
                f"register_task: {name!r} is already registered to {_qualified(known)}"
            )
        _REGISTERED[name] = task_cls
        return task_cls

    return add if cls is None else add(cls)


def is_vec_task_class(cls: object) -> bool:
    """Whether ``cls`` is a class shaped like IsaacGymEnvs' ``VecTask`` (``step``/``reset``)."""
    return isinstance(cls, type) and all(
        callable(getattr(cls, name, None)) for name in ("step", "reset")
    )


def unregister_task(name: str) -> None:
    """Forget a registered task (for tests and notebooks that define tasks repeatedly)."""
    _REGISTERED.pop(name, None)


def import_task_modules(modules: Iterable[str]) -> None:
    """Import every module of ``task_modules`` (their ``register_task`` calls run on import)."""
    for module in modules:
        try:
            importlib.import_module(str(module))
        except Exception as err:  # noqa: BLE001 - any failure is the user's module's
            raise TaskModuleError(str(module), err) from err


def find_task_class(name: str) -> type:
    """The class of task ``name``: suite, then registered, then installed entry points."""
    if name in SUITE:
        module, attr = SUITE[name]
        return getattr(importlib.import_module(f"{__package__}.{module}"), attr)
    if name in _REGISTERED:
        return _REGISTERED[name]
    for point in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if point.name == name:
            return register_task(name, point.load())
    upstream, why_not = _isaacgymenvs_task_map()
    if name in upstream:
        return upstream[name]
    known = ", ".join(sorted({*known_tasks(), *upstream}))
    raise UnknownTaskError(f"task={name!r}: unknown task; available: {known}{why_not}")


def _isaacgymenvs_task_map() -> tuple[dict[str, type], str]:
    """IsaacGymEnvs' ``isaacgym_task_map`` when ``isaacgymenvs`` is importable ({} if not), and
    why it could not be read (for the unknown-task message) when the package is there."""
    if importlib.util.find_spec("isaacgymenvs") is None:
        return {}, ""
    try:
        task_map = importlib.import_module("isaacgymenvs.tasks").isaacgym_task_map
    except Exception as err:  # noqa: BLE001 - e.g. Isaac Gym itself is not installed
        return {}, f" (isaacgymenvs is installed but its task map did not import: {err!r})"
    return dict(task_map), ""


def known_tasks() -> list[str]:
    """Every task name a run can ask for now, sorted."""
    installed = {p.name for p in metadata.entry_points(group=ENTRY_POINT_GROUP)}
    return sorted({*SUITE, *_REGISTERED, *installed})


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
