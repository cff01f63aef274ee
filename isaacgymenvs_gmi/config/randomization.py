"""Domain randomisation settings with IsaacGymEnvs' schema (``task.task.randomize`` and
``task.task.randomization_params``), validated at the edge.

Honoured so far: observation and action noise (``observations``, ``actions``: ``range``,
``range_correlated``, ``distribution`` gaussian / uniform, ``operation`` additive / scaling,
``schedule`` linear / constant with ``schedule_steps``) and ``frequency``. Accepted but not yet
applied, and listed once by the launcher: ``sim_params`` and ``actor_params``. A malformed entry
of either kind is refused naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._values import check_int, to_plain
from .errors import ConfigError, one_of

_PREFIX = "task.task.randomization_params"
NOISE_DISTRIBUTIONS = ("gaussian", "uniform")
OPERATIONS = ("additive", "scaling")
SCHEDULES = ("linear", "constant")
NOT_APPLIED = ("sim_params", "actor_params")  # accepted (upstream configs carry them), listed
_KNOWN = ("frequency", "observations", "actions", *NOT_APPLIED)


def _pair(key: str, value: Any) -> tuple[float, float]:
    value = to_plain(value)
    ok = isinstance(value, list | tuple) and len(value) == 2
    ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    if not ok:
        raise ConfigError(key, value, "must be a pair of numbers [a, b]")
    return float(value[0]), float(value[1])


@dataclass(frozen=True)
class NoiseSpec:
    """Noise on observations or actions, in upstream's terms.

    gaussian: ``range`` = (mean, std) of fresh noise each step, ``range_correlated`` = (mean,
    std) of a part drawn once per refresh; uniform: (low, high) of each. ``operation``: added
    to the tensor, or multiplied with it. ``schedule``: linear ramps the noise in over
    ``schedule_steps`` physics steps, constant switches it on after them, None: always on."""

    distribution: str
    operation: str
    range: tuple[float, float]
    range_correlated: tuple[float, float] = (0.0, 0.0)
    schedule: str | None = None
    schedule_steps: int = 0

    @classmethod
    def from_node(cls, key: str, node: Any) -> NoiseSpec:
        node = to_plain(node)
        if not isinstance(node, Mapping):
            raise ConfigError(key, node, "must be a mapping of noise settings")
        known = ("range", "range_correlated", "operation", "distribution")
        known += ("schedule", "schedule_steps")
        for name in node:
            if name not in known:
                raise ConfigError(f"{key}.{name}", node[name], one_of(known))
        distribution = node.get("distribution", "gaussian")
        if distribution not in NOISE_DISTRIBUTIONS:
            raise ConfigError(f"{key}.distribution", distribution, one_of(NOISE_DISTRIBUTIONS))
        operation = node.get("operation", "additive")
        if operation not in OPERATIONS:
            raise ConfigError(f"{key}.operation", operation, one_of(OPERATIONS))
        if "range" not in node:
            raise ConfigError(f"{key}.range", None, "missing: a pair of numbers")
        schedule = node.get("schedule")
        if schedule is not None and schedule not in SCHEDULES:
            raise ConfigError(f"{key}.schedule", schedule, one_of(SCHEDULES))
        steps = 0
        if schedule is not None:
            steps = check_int(f"{key}.schedule_steps", node.get("schedule_steps"), minimum=1)
        return cls(
            distribution=distribution,
            operation=operation,
            range=_pair(f"{key}.range", node["range"]),
            range_correlated=_pair(
                f"{key}.range_correlated", node.get("range_correlated", [0.0, 0.0])
            ),
            schedule=schedule,
            schedule_steps=steps,
        )

    def scale(self, step: int) -> float:
        """How much of the noise is on at physics step ``step`` (0..1)."""
        if self.schedule == "linear":
            return min(step, self.schedule_steps) / self.schedule_steps
        if self.schedule == "constant":
            return float(step >= self.schedule_steps)
        return 1.0


@dataclass(frozen=True)
class RandomizationSettings:
    """``frequency``: physics steps between refreshes of the noise parameters (and of the
    correlated draws). ``not_applied``: keys of ``randomization_params`` accepted but not
    reproduced yet."""

    frequency: int = 1
    observations: NoiseSpec | None = None
    actions: NoiseSpec | None = None
    not_applied: tuple[str, ...] = ()

    @classmethod
    def from_task_config(cls, task_config: Mapping[str, Any]) -> RandomizationSettings | None:
        """From the resolved ``task`` node; None when ``task.task.randomize`` is off."""
        task = to_plain(task_config.get("task")) or {}
        randomize = task.get("randomize", False)
        if not isinstance(randomize, bool):
            raise ConfigError("task.task.randomize", randomize, "must be True or False")
        if not randomize:
            return None
        params = to_plain(task.get("randomization_params")) or {}
        if not isinstance(params, Mapping):
            raise ConfigError(_PREFIX, params, "must be a mapping")
        for name in params:
            if name not in _KNOWN:
                raise ConfigError(f"{_PREFIX}.{name}", params[name], one_of(_KNOWN))
        noise = {
            name: NoiseSpec.from_node(f"{_PREFIX}.{name}", params[name])
            for name in ("observations", "actions")
            if params.get(name) is not None
        }
        frequency = check_int(f"{_PREFIX}.frequency", params.get("frequency", 1), minimum=1)
        not_applied: list[str] = []
        for name in (n for n in NOT_APPLIED if n in params):
            node = params[name]
            parts = list(node) if isinstance(node, Mapping) else []
            not_applied += [f"{name}.{part}" for part in parts] or [name]
        return cls(frequency=frequency, not_applied=tuple(not_applied), **noise)

    def describe(self) -> str:
        """One line: what is applied and what is not."""
        applied = [n for n in ("observations", "actions") if getattr(self, n) is not None]
        line = f"domain randomisation: {', '.join(applied) or 'nothing'} noise applied"
        line += f" (refreshed every {self.frequency} physics steps)"
        if self.not_applied:
            line += f"; accepted but not applied yet: {', '.join(self.not_applied)}"
        return line
