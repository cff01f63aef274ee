"""Compile a task's MuJoCo model with the timing and gravity of its IsaacGymEnvs config."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mujoco

from isaacgymenvs_gmi.config.task_env import SimTiming, asset_file_of
from isaacgymenvs_gmi.tasks.base import ASSETS_DIR, TaskConfigError, TaskLogic

from .urdf import spec_from_urdf


class AssetNotFoundError(FileNotFoundError):
    pass


class AssetLoadError(ValueError):
    """A user's asset file (under ``assets_root``) that MuJoCo cannot load or compile."""


def asset_path(
    task_cls: type[TaskLogic], task_cfg: dict[str, Any], assets_root: str | None
) -> Path:
    """Our bundled model, or ``<assets_root>/<env.asset.assetFileName>`` when a root is given."""
    if not assets_root:
        return ASSETS_DIR / task_cls.asset_file
    name = asset_file_of(task_cfg)
    if not name:
        raise AssetNotFoundError(
            f"assets_root={assets_root!r} is set but task.env.asset.assetFileName is missing"
        )
    path = Path(assets_root) / name
    if not path.is_file():
        raise AssetNotFoundError(
            f"assets_root={assets_root!r}: task.env.asset.assetFileName={name!r} not found ({path})"
        )
    return path


def compile_task_model(
    task_cls: type[TaskLogic], task_cfg: dict[str, Any], assets_root: str | None = None
) -> tuple[mujoco.MjModel, SimTiming]:
    """Load the task's MJCF/URDF, let the task edit it, compile, and apply the config's timing."""
    path = asset_path(task_cls, task_cfg, assets_root)
    try:
        urdf = path.suffix == ".urdf"
        spec = spec_from_urdf(path) if urdf else mujoco.MjSpec.from_file(str(path))
        task_cls.prepare_spec(spec, task_cfg.get("env", {}))
        model = spec.compile()
    except (ValueError, KeyError, AttributeError) as err:  # a task's edits miss a part it needs
        if not assets_root or isinstance(err, TaskConfigError):
            raise  # our bundled models load; a config error already names its key
        name = asset_file_of(task_cfg)
        raise AssetLoadError(
            f"assets_root={assets_root!r}: task.env.asset.assetFileName={name!r} ({path}) "
            f"could not be loaded as a {task_cls.name} model: {err}"
        ) from err
    timing = SimTiming.from_task_config(task_cfg)
    model.opt.timestep = timing.timestep
    gravity = task_cfg.get("sim", {}).get("gravity")
    if gravity is not None:
        model.opt.gravity[:] = gravity
    return model, timing
