"""Typed form of the population-based training settings (``pbt.*``, IsaacGymEnvs' PBT group).

A population is this run's GMIs: member ``i`` is GMI ``i``, each training its own policy with its
own hyperparameters. The keys and defaults are upstream's; ``pbt.mutation`` maps dotted config
keys (``train.params.config.*``, ``task.env.*``) to the function that mutates each.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from isaacgymenvs_gmi.config._values import (
    as_mapping,
    check_int,
    check_known_keys,
    select,
    to_plain,
)
from isaacgymenvs_gmi.config.errors import ConfigError, one_of
from isaacgymenvs_gmi.config.upstream_switches import pbt_enabled

PBT_KEYS = (
    "enabled",
    "policy_idx",
    "num_policies",
    "workspace",
    "dbg_mode",
    "interval_steps",
    "start_after",
    "initial_delay",
    "replace_fraction_worst",
    "replace_fraction_best",
    "replace_threshold_frac_std",
    "replace_threshold_frac_absolute",
    "mutation_rate",
    "change_min",
    "change_max",
    "mutation",
)
MUTATED_PREFIXES = ("train.params.config.", "task.env.")
MUTATION_FUNCTIONS = (
    "mutate_float",
    "mutate_float_min_1",
    "mutate_eps_clip",
    "mutate_mini_epochs",
    "mutate_discount",
)

_ABSENT = object()


@dataclass(frozen=True)
class PbtSettings:
    """Validated ``pbt.*`` of a run with ``pbt.enabled=True``.

    Attributes:
        num_policies: members of the population; ``None``: one per GMI (checked against the
            number of GMIs by the runtime, which knows it).
        workspace: where members exchange checkpoints and objectives, as given: a folder name
            under ``train_dir``, or an absolute path (a folder shared across nodes).
        dbg_mode: upstream's debugging switch, passed on as given.
        interval_steps: env steps between two PBT decisions of a member.
        start_after: env steps a member trains after (re)starting before it may be replaced.
        initial_delay: env steps of the whole run before any member may be replaced.
        replace_fraction_worst: share of the population counted as worst (rounded up).
        replace_fraction_best: share counted as best, the donors (rounded up).
        replace_threshold_frac_std: a donor must lead by this many spreads of the objectives ...
        replace_threshold_frac_absolute: ... and by this share of its own objective's size.
        mutation_rate: probability that each mutated key changes at a mutation.
        change_min, change_max: a mutated number is multiplied or divided by a factor drawn
            from ``[change_min, change_max]``.
        mutation: dotted key -> mutation function, in the order the config gives them.
        initial: each mutated key's value in the composed config, as a number (an int for
            ``mutate_mini_epochs``, else a float).
    """

    num_policies: int | None = None
    workspace: str = "pbt_workspace"
    dbg_mode: bool = False
    interval_steps: int = 10_000_000
    start_after: int = 10_000_000
    initial_delay: int = 20_000_000
    replace_fraction_worst: float = 0.125
    replace_fraction_best: float = 0.3
    replace_threshold_frac_std: float = 0.5
    replace_threshold_frac_absolute: float = 0.05
    mutation_rate: float = 0.15
    change_min: float = 1.1
    change_max: float = 1.5
    mutation: dict[str, str] = field(default_factory=dict)
    initial: dict[str, float | int] = field(default_factory=dict)

    @classmethod
    def from_cfg(cls, cfg: Any) -> PbtSettings | None:
        """From the run's whole composed config; ``None`` when it has no ``pbt`` group or
        ``pbt.enabled`` is False or null.

        Raises:
            ConfigError: naming ``pbt.<key>`` (``pbt.mutation.<dotted key>`` for a mutation
                entry) for an unknown key or a bad value.
        """
        if not pbt_enabled(cfg):
            return None
        given = as_mapping("pbt", select(cfg, "pbt"))
        check_known_keys("pbt", given, PBT_KEYS)
        defaults = cls()

        def get(name: str) -> Any:
            return to_plain(given.get(name, getattr(defaults, name, None)))

        policy_idx = get("policy_idx")
        if policy_idx is not None and (type(policy_idx) is not int or policy_idx != 0):
            raise ConfigError(
                "pbt.policy_idx",
                policy_idx,
                "members are this run's GMIs (member i is GMI i): leave pbt.policy_idx at 0",
            )
        change_max = _number("pbt.change_max", get("change_max"), "must be a finite number >= 1")
        if change_max < 1:
            raise ConfigError("pbt.change_max", get("change_max"), "must be a finite number >= 1")
        change_min = _number(
            "pbt.change_min",
            get("change_min"),
            f"must be a finite number in [1, pbt.change_max] (pbt.change_max={change_max:g})",
            low=1.0,
            high=change_max,
        )
        mutation, initial = _mutations(cfg, given.get("mutation"))
        return cls(
            num_policies=_num_policies(get("num_policies")),
            workspace=_workspace(get("workspace")),
            dbg_mode=_flag("pbt.dbg_mode", get("dbg_mode")),
            interval_steps=check_int("pbt.interval_steps", get("interval_steps"), minimum=1),
            start_after=check_int("pbt.start_after", get("start_after"), minimum=0),
            initial_delay=check_int("pbt.initial_delay", get("initial_delay"), minimum=0),
            replace_fraction_worst=_fraction("replace_fraction_worst", get),
            replace_fraction_best=_fraction("replace_fraction_best", get),
            replace_threshold_frac_std=_threshold("replace_threshold_frac_std", get),
            replace_threshold_frac_absolute=_threshold("replace_threshold_frac_absolute", get),
            mutation_rate=_number(
                "pbt.mutation_rate",
                get("mutation_rate"),
                "must be a number in [0, 1]",
                low=0.0,
                high=1.0,
            ),
            change_min=change_min,
            change_max=change_max,
            mutation=mutation,
            initial=initial,
        )

    @property
    def selection_fields(self) -> dict[str, float]:
        """The four ``replace_*`` settings, by name (what selecting a donor reads)."""
        return {
            "replace_fraction_worst": self.replace_fraction_worst,
            "replace_fraction_best": self.replace_fraction_best,
            "replace_threshold_frac_std": self.replace_threshold_frac_std,
            "replace_threshold_frac_absolute": self.replace_threshold_frac_absolute,
        }

    def describe(self) -> str:
        """One line for the start-up log."""
        members = (
            "one policy per GMI" if self.num_policies is None else f"{self.num_policies} policies"
        )
        return (
            f"PBT: {members}, workspace {self.workspace}; a decision every "
            f"{self.interval_steps:,} env steps, replacing from {self.initial_delay:,} steps "
            f"({self.start_after:,} after each restart); the worst "
            f"{_percent(self.replace_fraction_worst)} take weights from the best "
            f"{_percent(self.replace_fraction_best)} when these lead by > "
            f"{self.replace_threshold_frac_std:g} std and > "
            f"{_percent(self.replace_threshold_frac_absolute)}; {len(self.mutation)} keys "
            f"mutated at rate {self.mutation_rate:g} by factors in "
            f"[{self.change_min:g}, {self.change_max:g}]{' (dbg_mode)' if self.dbg_mode else ''}"
        )


def _percent(fraction: float) -> str:
    return f"{100 * fraction:g}%"


def _flag(key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(key, value, "must be True or False")
    return value


def _number(
    key: str,
    value: Any,
    constraint: str,
    *,
    low: float = -math.inf,
    high: float = math.inf,
    open_low: bool = False,
    open_high: bool = False,
) -> float:
    """A finite real number within the bounds; numeric strings ("1e-4") are accepted."""
    number = _as_float(value)
    if (
        number is None
        or not math.isfinite(number)
        or number < low
        or number > high
        or (open_low and number == low)
        or (open_high and number == high)
    ):
        raise ConfigError(key, value, constraint)
    return number


def _as_float(value: Any) -> float | None:
    """``value`` as a float when it is a real number or a numeric string, else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _fraction(name: str, get: Callable[[str], Any]) -> float:
    return _number(
        f"pbt.{name}", get(name), "must be a number in (0, 1]", low=0.0, high=1.0, open_low=True
    )


def _threshold(name: str, get: Callable[[str], Any]) -> float:
    return _number(f"pbt.{name}", get(name), "must be a finite number >= 0", low=0.0)


def _num_policies(value: Any) -> int | None:
    if value is None:
        return None
    try:
        return check_int("pbt.num_policies", value, minimum=2)
    except ConfigError:
        raise ConfigError(
            "pbt.num_policies",
            value,
            "must be null (one policy per GMI) or an integer >= 2: a population needs at "
            "least 2 policies",
        ) from None


def _workspace(value: Any) -> str:
    constraint = (
        "must be a folder name under train_dir (e.g. pbt_workspace) or an absolute path "
        "(a folder shared across nodes), without '..'"
    )
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ConfigError("pbt.workspace", value, constraint)
    parts = PurePath(value).parts
    if ".." in parts or "\\" in value:
        raise ConfigError("pbt.workspace", value, constraint)
    if not os.path.isabs(value) and (value.startswith("~") or parts == (".",)):
        raise ConfigError("pbt.workspace", value, constraint)
    return value


def _mutations(cfg: Any, node: Any) -> tuple[dict[str, str], dict[str, float | int]]:
    """``pbt.mutation`` checked against the composed config: key -> function, key -> value."""
    mutation, initial = {}, {}
    for key, function in as_mapping("pbt.mutation", node).items():
        where = f"pbt.mutation.{key}"
        if not isinstance(key, str) or not key.startswith(MUTATED_PREFIXES):
            raise ConfigError(
                where,
                function,
                "only train.params.config.* and task.env.* keys are mutated",
            )
        if function not in MUTATION_FUNCTIONS:
            raise ConfigError(where, function, one_of(MUTATION_FUNCTIONS))
        value = select(cfg, key, _ABSENT)
        if value is _ABSENT:
            task = select(cfg, "task_name", None) or select(cfg, "task.name", None)
            raise ConfigError(
                where,
                function,
                f"no such key in the composed config (task {task} / train config)",
            )
        mutation[key] = function
        initial[key] = _initial(key, function, value)
    return mutation, initial


def _initial(key: str, function: str, value: Any) -> float | int:
    """The mutated key's starting value, checked for what ``function`` can mutate; an error
    names the key itself (where the value is), and the mutation entry."""
    entry = f"mutated by {function} (pbt.mutation.{key})"
    if function == "mutate_mini_epochs":
        try:
            return check_int(key, value, minimum=1)
        except ConfigError:
            raise ConfigError(key, value, f"{entry}: must be an integer >= 1") from None
    if function == "mutate_discount":
        return _number(
            key,
            value,
            f"{entry}: must be a number strictly between 0 and 1",
            low=0.0,
            high=1.0,
            open_low=True,
            open_high=True,
        )
    if function == "mutate_eps_clip":
        return _number(key, value, f"{entry}: must be a number > 0", low=0.0, open_low=True)
    return _number(key, value, f"{entry}: must be a finite number")
