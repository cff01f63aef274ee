"""Typed form of the planner's settings (``gmi.plan.*``): how ``gmi.per_gpu=auto`` and
``num_envs=auto`` are searched (the paper's Algorithm 2, §5.2)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from ._values import as_mapping, check_int, check_known_keys, to_plain
from .errors import ConfigError

AUTO = "auto"


def is_auto(value: Any) -> bool:
    """``value`` asks the planner to choose (``auto``, any case)."""
    value = to_plain(value)
    return isinstance(value, str) and value.strip().lower() == AUTO


def _positive_float(key: str, value: Any) -> float:
    constraint = "must be a number > 0"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, value, constraint)
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ConfigError(key, value, constraint)
    return number


@dataclass(frozen=True)
class PlanSettings:
    """``gmi.plan.*``.

    Attributes:
        alpha: the saturation threshold: growing num_env stops when
            Sat = (dthroughput/throughput) / (dmemory/memory) falls below it (> 0; the paper
            uses 0.1).
        budget_s: wall-clock bound of the whole search, trial runs included (> 0).
        epochs: PPO epochs (or serving chunks' worth of steps) each trial runs.
        warmup_epochs: the first epochs of a trial, left out of its throughput (compiles,
            caches, allocator growth); < ``epochs - 1``.
        timeout_s: a trial that has not finished after this long is stopped and recorded as
            hanging.
        memory_mb: a trial whose processes hold more than this (resident memory on the CPU,
            device memory on a GPU) is stopped and recorded as out of memory; ``None``: 90% of
            the memory available when the search starts (of the device's on a GPU).
        max_per_gpu: the most GMIs per device tried; ``None``: 10 on a GPU (the paper's range),
            twice the device's cores on a CPU device.
        min_envs, max_envs: the num_env range of the free search (``num_envs=auto``), envs per
            GMI in powers of two (the paper: 128 ... 16384).
        replan: search again even when the cache holds a result for this task, train config,
            machine and package versions.
        cache_dir: where results are kept; ``None``: ``$XDG_CACHE_HOME/isaacgymenvs_gmi/plans``
            (``~/.cache/...`` without it).
    """

    alpha: float = 0.1
    budget_s: float = 900.0
    epochs: int = 12
    warmup_epochs: int = 3
    timeout_s: int = 300
    memory_mb: int | None = None
    max_per_gpu: int | None = None
    min_envs: int = 128
    max_envs: int = 16384
    replan: bool = False
    cache_dir: str | None = None

    @classmethod
    def from_cfg(cls, node: Any, *, prefix: str = "gmi.plan") -> PlanSettings:
        """Build from the ``gmi.plan`` node; missing keys take defaults.

        Raises:
            ConfigError: naming ``<prefix>.<key>`` for an unknown key or a bad value.
        """
        given = as_mapping(prefix, node)
        check_known_keys(prefix, given, tuple(f.name for f in fields(cls)))
        d = cls()

        def get(name: str) -> Any:
            return given.get(name, getattr(d, name))

        def optional_int(name: str, minimum: int) -> int | None:
            value = get(name)
            return None if value is None else check_int(f"{prefix}.{name}", value, minimum=minimum)

        epochs = check_int(f"{prefix}.epochs", get("epochs"), minimum=2)
        warmup = check_int(f"{prefix}.warmup_epochs", get("warmup_epochs"), minimum=0)
        if warmup > epochs - 2:
            raise ConfigError(
                f"{prefix}.warmup_epochs",
                warmup,
                f"must leave at least 2 measured epochs of the {epochs} (gmi.plan.epochs)",
            )
        min_envs = check_int(f"{prefix}.min_envs", get("min_envs"), minimum=1)
        max_envs = check_int(f"{prefix}.max_envs", get("max_envs"), minimum=1)
        if max_envs < min_envs:
            raise ConfigError(f"{prefix}.max_envs", max_envs, f"must be >= min_envs={min_envs}")
        replan = to_plain(get("replan"))
        if not isinstance(replan, bool):
            raise ConfigError(f"{prefix}.replan", replan, "must be true or false")
        cache_dir = to_plain(get("cache_dir"))
        if cache_dir is not None and (not isinstance(cache_dir, str) or not cache_dir.strip()):
            raise ConfigError(f"{prefix}.cache_dir", cache_dir, "must be null or a folder")
        return cls(
            alpha=_positive_float(f"{prefix}.alpha", get("alpha")),
            budget_s=_positive_float(f"{prefix}.budget_s", get("budget_s")),
            epochs=epochs,
            warmup_epochs=warmup,
            timeout_s=check_int(f"{prefix}.timeout_s", get("timeout_s"), minimum=1),
            memory_mb=optional_int("memory_mb", 1),
            max_per_gpu=optional_int("max_per_gpu", 1),
            min_envs=min_envs,
            max_envs=max_envs,
            replan=replan,
            cache_dir=cache_dir,
        )
