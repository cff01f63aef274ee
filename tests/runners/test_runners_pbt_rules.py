"""PBT's rules against hand-worked populations: who is replaced by whom under both thresholds,
only against equal or less experience, and the mutation functions' ranges."""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import replace

import pytest

from isaacgymenvs_gmi.config.pbt import PbtSettings
from isaacgymenvs_gmi.config.pbt_mutation import (
    MUTATIONS,
    mutate,
    mutate_discount,
    mutate_eps_clip,
    mutate_float,
    mutate_float_min_1,
    mutate_mini_epochs,
)
from isaacgymenvs_gmi.runners.pbt.selection import (
    SelectionSettings,
    decide,
    latest_records,
    may_replace,
    ranked,
    spread,
)

DEFAULTS = SelectionSettings(0.125, 0.3, 0.5, 0.05)  # IsaacGymEnvs' pbt_default.yaml


def test_the_worst_member_takes_a_best_members_weights_when_both_thresholds_are_passed():
    # N = 4: worst = ceil(0.5) = 1 member, best = ceil(1.2) = 2 members.
    # spread of [10, 60, 80, 100] = 33.45: by_std = 16.72; by_size = 0.05 x 100 or 80 = 5 or 4.
    population = {0: 100.0, 1: 80.0, 2: 60.0, 3: 10.0}
    assert ranked(population) == [0, 1, 2, 3]
    assert spread([10.0, 60.0, 80.0, 100.0]) == pytest.approx(33.4477, abs=1e-4)
    donors = set()
    for seed in range(20):
        decision = decide(3, population, 20.0, DEFAULTS, random.Random(seed))
        assert decision.action == "replace" and decision.donor in (0, 1), decision
        assert decision.params_from in (decision.donor, 3)
        donors.add(decision.donor)
    assert donors == {0, 1}  # a donor drawn among the best


def test_members_doing_well_keep_training():
    population = {0: 100.0, 1: 80.0, 2: 60.0, 3: 10.0}
    rng = random.Random(0)
    for member in (0, 1, 2):  # not among the worst
        assert decide(member, population, population[member], DEFAULTS, rng).action == "keep"
    # the worst member whose best this interval reached a best member's objective keeps on
    assert decide(3, population, 85.0, DEFAULTS, rng).action == "keep"


def test_below_the_absolute_threshold_the_member_only_mutates():
    # spread of [97.5, 98, 99, 100] = 0.96: by_std = 0.48; but by_size = 0.05 x 100 = 5 (or
    # 4.95) is more than the lead, 2.5 (or 1.5)
    population = {0: 100.0, 1: 99.0, 2: 98.0, 3: 97.5}
    for seed in range(10):
        decision = decide(3, population, 97.5, DEFAULTS, random.Random(seed))
        assert decision.action == "mutate" and decision.params_from == 3, decision


def test_below_the_spread_threshold_the_member_only_mutates():
    # ranked [0, 1, 3, 2]; spread of [0, 9, 10, 10] = 4.2057; lead of either donor = 10
    population = {0: 10.0, 1: 10.0, 2: 0.0, 3: 9.0}
    assert spread([0.0, 9.0, 10.0, 10.0]) == pytest.approx(4.2057, abs=1e-4)
    assert decide(2, population, 0.0, DEFAULTS, random.Random(1)).action == "replace"
    strict = SelectionSettings(0.125, 0.3, 3.0, 0.05)  # by_std = 12.6 > 10
    assert decide(2, population, 0.0, strict, random.Random(1)).action == "mutate"


def test_a_crashed_members_objective_does_not_inflate_the_spread():
    # five known: the worst fifth (one, the crashed -1000) is left out of the spread
    assert spread([100.0, 90.0, 85.0, 80.0, -1000.0]) == pytest.approx(
        statistics.pstdev([80.0, 85.0, 90.0, 100.0])
    )


def test_too_few_known_objectives_change_nothing():
    population = {0: 10.0, 1: 5.0, 2: None, 3: None}  # 2 known <= max(2, 4 // 2)
    assert ranked(population) == [0, 1, 2, 3]  # unknown ones count as worst
    decision = decide(3, population, -math.inf, DEFAULTS, random.Random(0))
    assert decision.action == "keep" and "only 2 objectives known" in decision.why


def test_members_compare_only_records_of_equal_or_less_experience():
    iterations = {0: [1, 2, 3], 1: [1, 2], 2: [4], 3: []}
    assert latest_records(iterations, at=2) == {0: 2, 1: 2, 2: None, 3: None}
    assert latest_records(iterations, at=4) == {0: 3, 1: 2, 2: 4, 3: None}


def test_weights_are_taken_only_after_the_start_delays():
    assert not may_replace(frames=900, frames_at_start=0, start_after=1000, initial_delay=0)
    assert not may_replace(frames=5000, frames_at_start=4500, start_after=1000, initial_delay=0)
    assert not may_replace(frames=1500, frames_at_start=0, start_after=1000, initial_delay=2000)
    assert may_replace(frames=2000, frames_at_start=500, start_after=1000, initial_delay=2000)


@pytest.mark.parametrize("seed", range(50))
def test_the_mutation_functions_stay_in_their_ranges(seed):
    rng = random.Random(seed)
    x = mutate_float(0.01, rng, 1.1, 1.5)
    assert 0.01 / 1.5 <= x <= 0.01 / 1.1 or 0.01 * 1.1 <= x <= 0.01 * 1.5
    assert mutate_float_min_1(1.05, rng, 1.1, 1.5) >= 1.0
    assert 0.01 <= mutate_eps_clip(0.29, rng, 1.1, 1.5) <= 0.3
    assert 0.01 <= mutate_eps_clip(0.011, rng, 1.1, 1.5) <= 0.3
    assert mutate_mini_epochs(1, rng, 1.1, 1.5) in (1, 2)
    assert mutate_mini_epochs(8, rng, 1.1, 1.5) in (7, 8)
    assert mutate_mini_epochs(4, rng, 1.1, 1.5) in (3, 5)
    horizon = 1.0 - mutate_discount(0.99, rng, 2.0, 3.0)  # its own factors, not these
    assert 0.01 / 1.2 - 1e-12 <= horizon <= 0.01 / 1.1 + 1e-12 or (
        0.01 * 1.1 - 1e-12 <= horizon <= 0.01 * 1.2 + 1e-12
    )


def test_mutate_follows_the_rate_and_is_reproducible():
    params = {"train.params.config.gamma": 0.99, "train.params.config.mini_epochs": 4}
    names = {"train.params.config.gamma": "mutate_discount",
             "train.params.config.mini_epochs": "mutate_mini_epochs"}  # fmt: skip
    never = PbtSettings(mutation=names, mutation_rate=0.0, change_min=1.1, change_max=1.5)
    same, changes = mutate(params, never, random.Random(0))
    assert same == params and changes == []
    always = replace(never, mutation_rate=1.0)
    new, changes = mutate(params, always, random.Random(7))
    assert [c.key for c in changes] == sorted(names) and all(new[k] != params[k] for k in names)
    assert mutate(params, always, random.Random(7))[0] == new
    assert changes[0].describe().startswith("train.params.config.gamma 0.99 -> ")
    assert set(MUTATIONS) == {
        "mutate_float", "mutate_float_min_1", "mutate_eps_clip", "mutate_mini_epochs",
        "mutate_discount",
    }  # fmt: skip
