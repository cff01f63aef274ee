"""Mutating a PBT member's hyperparameters, with the functions IsaacGymEnvs' mutation files name
(``cfg/pbt/mutation/*.yaml``: dotted config key -> function). Each key is mutated with
probability ``mutation_rate``; a function returns the new value:

- ``mutate_float``: multiplied or divided (even odds) by a factor drawn uniformly from
  ``[change_min, change_max]``; ``mutate_float_min_1``: the same, never below 1;
  ``mutate_eps_clip``: the same, kept within [0.01, 0.3];
- ``mutate_mini_epochs``: one more or one fewer (even odds), kept within [1, 8];
- ``mutate_discount``: ``1 - x`` scaled as by ``mutate_float`` with factors in [1.1, 1.2]
  (its horizon ``1 / (1 - x)`` changes by at most 20%).

The draws come from the ``random.Random`` passed in, so a member's mutations are reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Mutation = Callable[..., Any]  # (value, rng, change_min, change_max) -> new value


def mutate_float(x: float, rng: random.Random, change_min: float, change_max: float) -> float:
    factor = rng.uniform(change_min, change_max)
    return x / factor if rng.random() < 0.5 else x * factor


def mutate_float_min_1(x: float, rng: random.Random, change_min: float, change_max: float) -> float:
    return max(1.0, mutate_float(x, rng, change_min, change_max))


def mutate_eps_clip(x: float, rng: random.Random, change_min: float, change_max: float) -> float:
    return min(0.3, max(0.01, mutate_float(x, rng, change_min, change_max)))


def mutate_mini_epochs(x: int, rng: random.Random, change_min: float, change_max: float) -> int:
    step = 1 if rng.random() < 0.5 else -1
    return min(8, max(1, int(x) + step))


def mutate_discount(x: float, rng: random.Random, change_min: float, change_max: float) -> float:
    return 1.0 - mutate_float(1.0 - x, rng, 1.1, 1.2)  # the factors are fixed: see above


MUTATIONS: dict[str, Mutation] = {
    f.__name__: f
    for f in (
        mutate_float,
        mutate_float_min_1,
        mutate_eps_clip,
        mutate_mini_epochs,
        mutate_discount,
    )
}


@dataclass(frozen=True)
class Change:
    """One mutated hyperparameter: its dotted key, old and new value."""

    key: str
    before: Any
    after: Any

    def describe(self) -> str:
        return f"{self.key} {self.before:g} -> {self.after:g}"


def mutate(
    params: Mapping[str, Any], settings: Any, rng: random.Random
) -> tuple[dict[str, Any], list[Change]]:
    """``params`` (dotted key -> value) with each key of ``settings.mutation`` (a
    ``PbtSettings``) mutated with probability ``mutation_rate`` by the function it names;
    returns the new params and what changed, in key order."""
    new, changes = dict(params), []
    for key in sorted(settings.mutation):
        if rng.random() >= settings.mutation_rate:
            continue
        before = params[key]
        mutation = MUTATIONS[settings.mutation[key]]
        after = mutation(before, rng, settings.change_min, settings.change_max)
        new[key] = after
        changes.append(Change(key, before, after))
    return new, changes
