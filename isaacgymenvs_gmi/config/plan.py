"""Typed form of the planner's settings (``gmi.plan.*``): how ``gmi.per_gpu=auto`` and
``num_envs=auto`` are searched (the paper's Algorithm 2, §5.2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._values import to_plain
from .errors import ConfigError
from .schema import FLAG, Int, Real, Settings, Text, setting

AUTO = "auto"


def is_auto(value: Any) -> bool:
    """``value`` asks the planner to choose (``auto``, any case)."""
    value = to_plain(value)
    return isinstance(value, str) and value.strip().lower() == AUTO


@dataclass(frozen=True)
class PlanSettings(Settings):
    """``gmi.plan.*``.

    Attributes:
        alpha: the saturation threshold: growing num_env stops when
            Sat = (dthroughput/throughput) / (dmemory/memory) falls below it (the paper: 0.1).
        budget_s: wall-clock bound of the whole search, trial runs included.
        epochs: PPO epochs (or serving chunks' worth of steps) each trial runs.
        warmup_epochs: the first epochs of a trial, left out of its throughput (compiles,
            caches, allocator growth).
        timeout_s: a trial still running after this long is stopped and recorded as hanging.
        memory_mb: a trial whose processes hold more than this (host memory on the CPU, device
            memory on a GPU) is stopped as out of memory; ``None``: 90% of what is available
            when the search starts.
        max_per_gpu: the most GMIs per device tried; ``None``: 10 on a GPU (the paper's range),
            twice the device's cores on a CPU device.
        min_envs, max_envs: the num_env range of the free search (``num_envs=auto``), envs per
            GMI in powers of two.
        replan: search again even when the cache holds a result for this task, train config,
            machine and package versions.
        cache_dir: where results are kept; ``None``: ``$XDG_CACHE_HOME/isaacgymenvs_gmi/plans``
            (``~/.cache/...`` without it).
    """

    PREFIX = "gmi.plan"
    alpha: float = setting(0.1, Real(0.0, open_low=True))
    budget_s: float = setting(900.0, Real(0.0, open_low=True))
    epochs: int = setting(12, Int(2))
    warmup_epochs: int = setting(3, Int(0))
    timeout_s: int = setting(300, Int(1))
    memory_mb: int | None = setting(None, Int(1, optional=True))
    max_per_gpu: int | None = setting(None, Int(1, optional=True))
    min_envs: int = setting(128, Int(1))
    max_envs: int = setting(16384, Int(1))
    replan: bool = setting(False, FLAG)
    cache_dir: str | None = setting(None, Text(optional=True))

    def cross_check(self, prefix: str) -> None:
        if self.warmup_epochs > self.epochs - 2:
            raise ConfigError(
                f"{prefix}.warmup_epochs",
                self.warmup_epochs,
                f"must leave at least 2 measured epochs of the {self.epochs} ({prefix}.epochs)",
            )
        if self.max_envs < self.min_envs:
            raise ConfigError(
                f"{prefix}.max_envs", self.max_envs, f"must be >= min_envs={self.min_envs}"
            )
