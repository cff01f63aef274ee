"""Isaac Gym / PhysX settings that the MuJoCo backends accept but do not use.

Upstream configs are loaded unchanged, so they carry settings that only mean something to Isaac
Gym (:data:`TOP_LEVEL_KEYS`, :data:`TASK_KEYS`, ``task.env.plane.*``: the MuJoCo solver and
contacts come from the model file, assets through ``assets_root``). Rather than fail or silently
drop them, the runtime lists them once per process. Domain randomisation has its own line
(:mod:`.randomization`). Kept, because the MuJoCo tasks read them: ``task.sim.dt``,
``substeps``, ``up_axis``, ``gravity``, and the ``task.env`` reward, cost and episode settings.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

TOP_LEVEL_KEYS: tuple[str, ...] = (
    "physics_engine",
    "pipeline",
    "graphics_device_id",
    "num_threads",
    "solver_type",
    "num_subscenes",
)
TASK_KEYS: tuple[str, ...] = (
    "task.physics_engine",
    "task.sim.physx",
    "task.sim.flex",
    "task.sim.use_gpu_pipeline",
    "task.env.envSpacing",
    "task.env.enableCameraSensors",
    "task.env.enableDebugVis",
    "task.env.asset.assetRoot",
)
_PLANE = "task.env.plane"

_reported = False


def ignored_physx_keys(cfg: Any) -> list[str]:
    """Dotted keys of Isaac-Gym-only settings present in ``cfg``, in a fixed order."""
    keys = [k for k in TOP_LEVEL_KEYS + TASK_KEYS if _lookup(cfg, k) is not _ABSENT]
    plane = _lookup(cfg, _PLANE)
    if isinstance(plane, Mapping):
        keys.extend(f"{_PLANE}.{name}" for name in plane)
    return keys


def report_ignored_keys(cfg: Any, log: logging.Logger, unread: Sequence[str] = ()) -> list[str]:
    """Log the ignored keys on one INFO line, the first time only in this process: the Isaac
    Gym settings, then ``unread`` (keys neither the task nor rl-games reads). Returns the keys
    logged ([] when none)."""
    global _reported
    if _reported:
        return []
    _reported = True
    keys = ignored_physx_keys(cfg)
    parts = []
    if keys:
        parts.append(
            "Isaac Gym settings not used by the MuJoCo backends (accepted and ignored): "
            + ", ".join(keys)
        )
    if unread:
        said = "read by neither the task nor rl-games"
        parts.append(f"{said}: " if keys else f"settings {said} (accepted and ignored): ")
        parts[-1] += ", ".join(unread)
    if parts:
        log.info("%s", "; ".join(parts))
    return [*keys, *unread]


_ABSENT = object()


def _lookup(cfg: Any, key: str) -> Any:
    """Value at a dotted key (sub-configs as plain dicts), or ``_ABSENT``."""
    if isinstance(cfg, DictConfig):
        node = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_resolution_failure=False)
        if isinstance(node, DictConfig):
            return OmegaConf.to_container(node, resolve=False)
        return node
    node = cfg
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _ABSENT
        node = node[part]
    return node
