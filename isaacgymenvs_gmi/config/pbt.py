"""Typed form of the population-based training settings (``pbt.*``, IsaacGymEnvs' PBT group,
its keys and defaults). A population is this run's GMIs: member ``i`` is GMI ``i``, each
training its own policy with its own hyperparameters.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import PurePath
from typing import Any

from ._values import as_mapping, select
from .errors import ConfigError
from .pbt_mutation import MUTATIONS
from .schema import (
    FLAG,
    INVALID,
    Choice,
    Flag,
    Int,
    Kind,
    Real,
    Settings,
    Text,
    keys,
    parse,
    setting,
)
from .upstream_switches import pbt_enabled

MUTATED_PREFIXES = ("train.params.config.", "task.env.")
# What each function can mutate (the rest: any finite number).
_MUTABLE = {
    "mutate_mini_epochs": Int(1),
    "mutate_discount": Real(0.0, 1.0, open_low=True, open_high=True),
    "mutate_eps_clip": Real(0.0, open_low=True),
}
_ABSENT = object()
_FRACTION = Real(0.0, 1.0, open_low=True)
_MEMBERS = "members are this run's GMIs (member i is GMI i): leave pbt.policy_idx at 0"
_POPULATION = "null: one policy per GMI; a population needs at least 2 policies"


@dataclass(frozen=True)
class _Workspace(Text):
    what: str = (
        "a folder name under train_dir (e.g. pbt_workspace) or an absolute path (a folder "
        "shared across nodes), without '..'"
    )

    def convert(self, value: Any) -> Any:
        if not isinstance(value, str) or not value.strip() or value != value.strip():
            return INVALID
        parts = PurePath(value).parts
        if ".." in parts or "\\" in value:
            return INVALID
        if not os.path.isabs(value) and (value.startswith("~") or parts == (".",)):
            return INVALID
        return value


@dataclass(frozen=True)
class _Mutations(Kind):
    """``pbt.mutation``: dotted key -> the function that mutates it (in the config's order)."""

    def text(self) -> str:
        return "must be a mapping of dotted keys to mutation functions"

    def check(self, key: str, value: Any) -> dict[str, str]:
        mutation = {}
        for name, function in as_mapping(key, value).items():
            where = f"{key}.{name}"
            if not isinstance(name, str) or not name.startswith(MUTATED_PREFIXES):
                raise ConfigError(
                    where, function, "only train.params.config.* and task.env.* keys are mutated"
                )
            mutation[name] = Choice(tuple(MUTATIONS)).check(where, function)
        return mutation


@dataclass(frozen=True)
class PbtSettings(Settings):
    """Validated ``pbt.*`` of a run with ``pbt.enabled=True``.

    Attributes:
        num_policies: members of the population; ``None``: one per GMI.
        workspace: where members exchange checkpoints and objectives: a folder name under
            ``train_dir``, or an absolute path (a folder shared across nodes).
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
        mutation: dotted key -> mutation function, in the config's order.
        initial: each mutated key's value in the composed config (an int for
            ``mutate_mini_epochs``, else a float).
        started: when the config was read, the stamp every member's run folder shares.
    """

    PREFIX = "pbt"
    enabled: bool = setting(True, Flag(optional=True))  # settings exist only when it is
    policy_idx: int | None = setting(0, Int(0, 0, optional=True, why=_MEMBERS))
    num_policies: int | None = setting(None, Int(2, optional=True, why=_POPULATION))
    workspace: str = setting("pbt_workspace", _Workspace())
    dbg_mode: bool = setting(False, FLAG)
    interval_steps: int = setting(10_000_000, Int(1))
    start_after: int = setting(10_000_000, Int(0))
    initial_delay: int = setting(20_000_000, Int(0))
    replace_fraction_worst: float = setting(0.125, _FRACTION)
    replace_fraction_best: float = setting(0.3, _FRACTION)
    replace_threshold_frac_std: float = setting(0.5, Real(0.0))
    replace_threshold_frac_absolute: float = setting(0.05, Real(0.0))
    mutation_rate: float = setting(0.15, Real(0.0, 1.0))
    change_min: float = setting(1.1, Real(1.0))
    change_max: float = setting(1.5, Real(1.0))
    mutation: dict[str, str] = setting({}, _Mutations())
    initial: dict[str, float | int] = field(default_factory=dict)
    started: str = field(default="", compare=False)  # "_%d-%H-%M-%S", one for all members

    @classmethod
    def from_cfg(cls, cfg: Any) -> PbtSettings | None:
        """From the run's whole composed config; ``None`` when ``pbt.enabled`` is not True.
        A ConfigError names ``pbt.<key>`` (``pbt.mutation.<dotted key>`` for a mutation entry,
        the mutated key for a value its function cannot mutate)."""
        if not pbt_enabled(cfg):
            return None
        settings = parse(cls, select(cfg, cls.PREFIX), cls.PREFIX)
        initial = {key: _initial(cfg, key, fn) for key, fn in settings.mutation.items()}
        return replace(settings, initial=initial, started=datetime.now().strftime("_%d-%H-%M-%S"))

    def cross_check(self, prefix: str) -> None:
        if self.change_min > self.change_max:
            raise ConfigError(
                f"{prefix}.change_min",
                self.change_min,
                f"must be a number in [1, {prefix}.change_max] ({prefix}.change_max="
                f"{self.change_max:g})",
            )

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


def _initial(cfg: Any, key: str, function: str) -> float | int:
    """The mutated key's starting value in the composed config, checked for what ``function``
    can mutate; an error names the key itself (where the value is), and the mutation entry."""
    value = select(cfg, key, _ABSENT)
    if value is _ABSENT:
        task = select(cfg, "task_name", None) or select(cfg, "task.name", None)
        raise ConfigError(
            f"pbt.mutation.{key}",
            function,
            f"no such key in the composed config (task {task} / train config)",
        )
    kind = _MUTABLE.get(function, Real())
    try:
        return kind.check(key, value)
    except ConfigError:
        entry = f"mutated by {function} (pbt.mutation.{key})"
        raise ConfigError(key, value, f"{entry}: {kind.text()}") from None


PBT_KEYS = keys(PbtSettings)
