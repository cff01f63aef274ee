"""Typed form of what the runtime reads of a task's resolved config (``task.env.*`` and
``task.sim.*``), read once and checked (``ConfigError`` naming the key). The task still receives
its ``env`` section as is; nothing here has a silent default where upstream's files always give
a value (``task.sim.dt``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .schema import POSITIVE, Int


def _sections(task_config: Mapping[str, Any]) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    return task_config.get("sim") or {}, task_config.get("env") or {}


@dataclass(frozen=True)
class SimTiming:
    """IsaacGymEnvs timing: an env step is ``controlFrequencyInv`` sim steps of ``dt`` seconds,
    each split into ``substeps``; MuJoCo integrates ``nstep`` steps of ``timestep`` each."""

    dt: float
    substeps: int = 1
    control_freq_inv: int = 1

    @property
    def timestep(self) -> float:
        return self.dt / self.substeps

    @property
    def nstep(self) -> int:
        return self.substeps * self.control_freq_inv

    @classmethod
    def from_task_config(cls, task_config: Mapping[str, Any]) -> SimTiming:
        """``task.sim.dt`` (required), ``task.sim.substeps`` and ``task.env.controlFrequencyInv``
        (positive integers, 1 when not given)."""
        sim, env = _sections(task_config)
        if "dt" not in sim:
            raise ConfigError("task.sim.dt", None, "missing: the physics time step in seconds")
        dt = POSITIVE.check("task.sim.dt", sim["dt"])
        substeps = Int(1).check("task.sim.substeps", sim.get("substeps", 1))
        control = Int(1).check("task.env.controlFrequencyInv", env.get("controlFrequencyInv", 1))
        if "episodeLength" in env:
            Int(1).check("task.env.episodeLength", env["episodeLength"])
        return cls(dt, substeps, control)


@dataclass(frozen=True)
class TaskEnvSettings:
    """``num_envs``: envs per GMI (``task.env.numEnvs``); ``timing``; observations are clipped
    to ``[-clip_obs, clip_obs]`` (``clipObservations``; inf: not clipped), actions likewise to
    ``clip_actions`` (inf, as upstream, where the file sets none: ``clip_actions_given``);
    ``asset_file``: ``task.env.asset.assetFileName`` (read under ``assets_root``), if given."""

    num_envs: int
    timing: SimTiming
    clip_obs: float = math.inf
    clip_actions: float = math.inf
    clip_actions_given: bool = False
    asset_file: str | None = None

    @classmethod
    def from_task_config(cls, task_config: Mapping[str, Any]) -> TaskEnvSettings:
        """From the resolved ``task`` node (raises :class:`ConfigError` naming the key)."""
        _, env = _sections(task_config)
        return cls(
            num_envs=Int(1).check("task.env.numEnvs", env.get("numEnvs")),
            timing=SimTiming.from_task_config(task_config),
            clip_obs=_clip("task.env.clipObservations", env.get("clipObservations")),
            clip_actions=_clip("task.env.clipActions", env.get("clipActions")),
            clip_actions_given="clipActions" in env,
            asset_file=asset_file_of(task_config),
        )


def asset_file_of(task_config: Mapping[str, Any]) -> str | None:
    """``task.env.asset.assetFileName``, or None where the file names no asset."""
    _, env = _sections(task_config)
    asset = env.get("asset") or {}
    name = asset.get("assetFileName") if isinstance(asset, Mapping) else None
    return None if name in (None, "") else str(name)


def _clip(key: str, value: Any) -> float:
    """A clip bound: a number > 0 (inf, or none given: not clipped)."""
    if value is None or value == math.inf:
        return math.inf
    return POSITIVE.check(key, value)
