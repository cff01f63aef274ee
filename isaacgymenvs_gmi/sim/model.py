"""Compile a task's MuJoCo model with the timing and gravity of its IsaacGymEnvs config."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mujoco

from isaacgymenvs_gmi.tasks.base import ASSETS_DIR, TaskConfigError, TaskLogic

from .urdf import spec_from_urdf


@dataclass(frozen=True)
class SimTiming:
    """IsaacGymEnvs timing: an env step is ``controlFrequencyInv`` sim steps of ``dt`` seconds,
    each split into ``substeps``; MuJoCo integrates ``nstep`` steps of ``timestep`` each."""

    dt: float
    substeps: int
    control_freq_inv: int

    @property
    def timestep(self) -> float:
        return self.dt / self.substeps

    @property
    def nstep(self) -> int:
        return self.substeps * self.control_freq_inv

    @classmethod
    def from_task_cfg(cls, task_cfg: dict[str, Any]) -> SimTiming:
        sim, env = task_cfg.get("sim", {}), task_cfg.get("env", {})
        return cls(
            dt=float(sim.get("dt", 1.0 / 60.0)),
            substeps=int(sim.get("substeps", 1)),
            control_freq_inv=int(env.get("controlFrequencyInv", 1)),
        )


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
    name = task_cfg.get("env", {}).get("asset", {}).get("assetFileName")
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
        name = task_cfg["env"]["asset"]["assetFileName"]
        raise AssetLoadError(
            f"assets_root={assets_root!r}: task.env.asset.assetFileName={name!r} ({path}) "
            f"could not be loaded as a {task_cls.name} model: {err}"
        ) from err
    timing = SimTiming.from_task_cfg(task_cfg)
    model.opt.timestep = timing.timestep
    gravity = task_cfg.get("sim", {}).get("gravity")
    if gravity is not None:
        model.opt.gravity[:] = gravity
    return model, timing
