"""How a PBT member decides, at the end of each interval, whether to take another member's weights
(DexPBT's decentralised rule, as IsaacGymEnvs' ``pbt.py`` applies it).

Each member decides for itself from the workspace, comparing itself only with records at the
same or an earlier iteration; unknown objectives count as worst. A member among the worst
``ceil(replace_fraction_worst x N)``, below every one of the best
``ceil(replace_fraction_best x N)``, picks a random donor among those best once more than
``max(2, N // 2)`` objectives are known; it takes the donor's weights when the donor leads by
more than ``replace_threshold_frac_std`` x the spread (std without the worst fifth) and
``replace_threshold_frac_absolute`` x the donor's magnitude, mutating the donor's or its own
hyperparameters at even odds. Otherwise it mutates its own.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True)
class SelectionSettings:
    """``pbt.replace_*`` of IsaacGymEnvs' PBT config."""

    replace_fraction_worst: float
    replace_fraction_best: float
    replace_threshold_frac_std: float
    replace_threshold_frac_absolute: float

    @classmethod
    def of(cls, settings: Any) -> SelectionSettings:
        """The ``replace_*`` fields of ``settings`` (``pbt.*``)."""
        return cls(**{f.name: getattr(settings, f.name) for f in fields(cls)})


@dataclass(frozen=True)
class Decision:
    """What member ``member`` does: ``"keep"`` (train on), ``"mutate"`` (own weights, mutated
    hyperparameters) or ``"replace"`` (``donor``'s weights, mutated hyperparameters);
    ``params_from``: whose hyperparameters are mutated; ``why``: one line for the log."""

    member: int
    action: str
    why: str
    donor: int | None = None
    params_from: int | None = None


def ranked(objectives: Mapping[int, float | None]) -> list[int]:
    """Members, best objective first; unknown objectives last (ties: lower member first)."""
    return sorted(objectives, key=lambda m: (objectives[m] is None, -(objectives[m] or 0.0), m))


def decide(
    member: int,
    objectives: Mapping[int, float | None],
    best_this_interval: float,
    settings: SelectionSettings,
    rng: random.Random,
) -> Decision:
    """The decision of ``member`` given every member's objective at this iteration or before
    (``objectives``, ``None``: none recorded yet) and its own best this interval."""
    n = len(objectives)
    order = ranked(objectives)
    best = order[: math.ceil(settings.replace_fraction_best * n)]
    worst = order[n - math.ceil(settings.replace_fraction_worst * n) :]
    if member not in worst:
        return Decision(member, "keep", f"not among the worst {worst}")
    best_objectives = [objectives[m] for m in best if objectives[m] is not None]
    if best_objectives and best_this_interval >= min(best_objectives):
        return Decision(member, "keep", "its best this interval matches the best members'")
    known = sorted(o for o in objectives.values() if o is not None)
    if len(known) <= max(2, n // 2):
        return Decision(member, "keep", f"only {len(known)} objectives known")
    donor = rng.choice(best)
    mine, theirs = objectives[member], objectives[donor]
    assert theirs is not None  # the best members are known once this many are
    lead = theirs - (mine if mine is not None else -math.inf)
    by_std = settings.replace_threshold_frac_std * spread(known)
    by_size = settings.replace_threshold_frac_absolute * abs(theirs)
    donors_params = rng.random() < 0.5  # drawn either way: the same draws, whatever follows
    if lead > by_std and lead > by_size:
        why = f"member {donor} leads by {lead:g} (> {by_std:g} by spread, > {by_size:g} by size)"
        return Decision(member, "replace", why, donor, donor if donors_params else member)
    why = f"member {donor} leads by only {lead:g} (thresholds {by_std:g}, {by_size:g})"
    return Decision(member, "mutate", why, None, member)


def spread(objectives: list[float]) -> float:
    """Standard deviation of the known ``objectives`` without their worst fifth (rounded down)."""
    ordered = sorted(objectives)
    return statistics.pstdev(ordered[math.floor(0.2 * len(ordered)) :])


def latest_records(iterations: Mapping[int, list[int]], at: int) -> dict[int, int | None]:
    """Per member, its newest recorded iteration at or before ``at`` (equal or less
    experience), or None when it has none yet."""
    return {m: max((i for i in its if i <= at), default=None) for m, its in iterations.items()}


def may_replace(frames: int, frames_at_start: int, start_after: int, initial_delay: int) -> bool:
    """Whether a member may take other weights yet: ``start_after`` frames since it (re)started
    and ``initial_delay`` frames in all (``pbt.start_after``, ``pbt.initial_delay``)."""
    return frames - frames_at_start >= start_after and frames >= initial_delay
