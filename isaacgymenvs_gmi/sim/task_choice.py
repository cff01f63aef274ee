"""The task a run names: its modules imported, its class found and its config checked, before
anything is simulated (:class:`ConfigError` naming ``task``, ``task_modules`` or the
``task.env`` key at fault)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.config.randomization import RandomizationSettings
from isaacgymenvs_gmi.config.sources import bundled_config_dir
from isaacgymenvs_gmi.tasks import (
    TaskModuleError,
    UnknownTaskError,
    get_task_class,
    import_task_modules,
    is_vec_task_class,
)
from isaacgymenvs_gmi.tasks.base import TaskConfigError

from .envs import is_task_logic
from .foreign import preflight_vec_task
from .preflight import TaskFootprint, preflight_task


@dataclass
class ChosenTask:
    """The task's class and its resolved config (handed on as is), checked."""

    name: str
    cls: type
    config: dict[str, Any]
    foreign: bool  # a class with IsaacGymEnvs' VecTask interface, not one of our TaskLogics
    randomization: RandomizationSettings | None  # a foreign VecTask reads its own

    def preflight(self, assets_root: str | None) -> TaskFootprint:
        """Its widths and sizes, from a model built without simulating (ConfigError)."""
        if self.foreign:
            return preflight_vec_task(self.cls, self.config)
        bundled = _bundled_env(self.name)
        return preflight_task(self.cls, self.config, assets_root, bundled, self.randomization)


def choose_task(cfg: DictConfig) -> ChosenTask:
    """``task_name``'s class (ours or a VecTask class) and its ``task`` node, resolved once."""
    try:
        task_cls = get_task_class(cfg.task_name)
    except UnknownTaskError as e:
        raise ConfigError("task", cfg.task_name, str(e).split(": ", 1)[1]) from None
    config = OmegaConf.to_container(cfg.task, resolve=True)
    foreign = not is_task_logic(task_cls)
    if foreign and not is_vec_task_class(task_cls):
        raise ConfigError(
            "task", cfg.task_name, f"{task_cls!r} is neither a TaskLogic nor a VecTask class"
        )
    try:
        if not foreign:
            task_cls.check_config(config["env"])
    except TaskConfigError as e:
        raise ConfigError(f"task.env.{e.key}", e.value, e.constraint) from None
    randomization = None if foreign else RandomizationSettings.from_task_config(config)
    return ChosenTask(cfg.task_name, task_cls, config, foreign, randomization)


def load_task_modules(value: object) -> tuple[str, ...]:
    """Import the modules of ``task_modules`` (a list of dotted names, or one name)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        names = [value]
    else:
        names = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError("task_modules", value, "must be a list of module names, e.g. [pkg.tasks]")
    try:
        import_task_modules(names)
    except TaskModuleError as err:
        raise ConfigError("task_modules", err.module, f"cannot be imported: {err.cause}") from None
    return tuple(names)


def _bundled_env(task_name: str) -> dict | None:
    """The ``env`` section of the bundled task file of ``task_name``, if there is one."""
    path = bundled_config_dir() / "task" / f"{task_name}.yaml"
    if not path.is_file():
        return None
    return OmegaConf.to_container(OmegaConf.load(path).get("env", {}), resolve=False)
