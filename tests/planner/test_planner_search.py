"""Algorithm 2's decisions over tables of fake profiles: skips, the Sat break, projection, ties,
the memory model, the GMI sweep's stop and the time budget."""

from __future__ import annotations

import math

import pytest

from isaacgymenvs_gmi.planner.search import (
    Candidate,
    MemoryModel,
    Profile,
    Shape,
    saturation,
    search,
)


def fake(table: dict[tuple[int, int], tuple[float, float] | str], seconds: float = 1.0):
    """A profiler over ``(per_gpu, num_envs) -> (env steps/s, MiB)`` or a failure reason; it
    records the candidates it was asked for."""
    asked: list[Candidate] = []

    def profile(c: Candidate, _left: float) -> Profile:
        asked.append(c)
        got = table[(c.per_gpu, c.num_envs)]
        if isinstance(got, str):
            return Profile.failed(got, seconds)
        return Profile(True, got[0], got[1], seconds=seconds)

    profile.asked = asked
    return profile


def measured(c: Candidate, p: Profile) -> float:
    return p.env_steps_per_s


def decisions(result) -> dict[tuple[int, int], str]:
    return {(r.candidate.per_gpu, r.candidate.num_envs): r.decision for r in result.rows}


@pytest.mark.parametrize(
    ("top", "mem", "pre_top", "pre_mem", "want"),
    [
        (180, 110, 100, 100, 8.0),  # +80% throughput for +10% memory
        (190, 200, 180, 110, (10 / 180) / (90 / 110)),
        (150, 100, 100, 100, math.inf),  # faster at no memory cost
        (90, 100, 100, 100, -math.inf),  # slower at no memory cost: saturated
        (90, 200, 100, 100, -0.1),  # slower and bigger
    ],
)
def test_saturation_is_the_papers_ratio(top, mem, pre_top, pre_mem, want):
    assert saturation(top, mem, pre_top, pre_mem) == pytest.approx(want)


def test_a_candidate_that_does_not_run_is_skipped_and_the_next_one_starts_the_sweep():
    profile = fake({(1, 128): "crash: boom", (1, 256): (100, 100), (1, 512): (150, 110)})
    result = search([Shape(1, (128, 256, 512))], profile, measured, alpha=0.1)
    assert decisions(result) == {
        (1, 128): "not runnable: crash: boom",
        (1, 256): "best so far",
        (1, 512): "chosen",
    }
    assert result.best == Candidate(1, 512)
    assert result.rows[1].sat is None  # the first runnable point has nothing to compare with
    assert result.rows[2].sat == pytest.approx(0.5 / 0.1)


def test_sat_below_alpha_ends_the_shape_and_larger_num_env_is_never_run():
    table = {
        (1, 128): (100, 100),
        (1, 256): (180, 110),
        (1, 512): (190, 200),
        (1, 1024): (200, 400),
    }
    shape = Shape(1, (128, 256, 512, 1024))
    profile = fake(table)
    result = search([shape], profile, measured, alpha=0.1)
    assert [c.num_envs for c in profile.asked] == [128, 256, 512]
    assert decisions(result)[(1, 512)] == "saturated (Sat < 0.1)"
    assert result.best == Candidate(1, 256)
    # Sat at 512 is 0.068 and at 1024 0.053: a looser threshold keeps growing to the end
    assert search([shape], fake(table), measured, alpha=0.05).best == Candidate(1, 1024)


def test_the_projection_picks_the_winner_not_the_measurement():
    profile = fake({(2, 256): (100, 100), (1, 512): (120, 100)})
    # a projection that charges one GMI per device a cost the measurement does not show
    result = search(
        [Shape(2, (256,)), Shape(1, (512,))],
        profile,
        lambda c, p: p.env_steps_per_s * (1.0 if c.per_gpu == 2 else 0.5),
        alpha=0.1,
    )
    assert result.best == Candidate(2, 256)
    assert result.projected == 100


@pytest.mark.parametrize(
    ("a", "b", "winner"),
    [
        ((100.0, 500.0), (100.0, 400.0), 1),  # exact tie: fewer GMIs
        ((101.5, 500.0), (100.0, 400.0), 1),  # within 2%: fewer GMIs
        ((103.0, 500.0), (100.0, 400.0), 2),  # beyond the band: faster wins
    ],
)
def test_ties_go_to_fewer_gmis(a, b, winner):
    profile = fake({(2, 256): a, (1, 512): b})
    result = search([Shape(2, (256,)), Shape(1, (512,))], profile, measured, alpha=0.1)
    assert result.best.per_gpu == winner


def test_a_tie_between_equal_gmi_counts_goes_to_less_memory():
    shapes = [Shape(2, (256,), "pinned"), Shape(2, (256,), "shared")]
    memory = {"pinned": 500.0, "shared": 450.0}

    def twice(c, left):
        return Profile(True, 100.0, memory[c.cores], seconds=1)

    result = search(shapes, twice, measured, alpha=0.1)
    assert result.best == Candidate(2, 256, "shared")


def test_the_memory_model_prunes_what_cannot_fit():
    # per GMI: 100 MiB + 1 MiB per env, two GMIs; cap 1500 MiB: 512 envs (1224) fit, 1024 not
    table = {(2, n): (100.0 + n, 2 * (100.0 + n)) for n in (128, 256, 512, 1024)}
    profile = fake(table)
    result = search(
        [Shape(2, (128, 256, 512, 1024))], profile, measured, alpha=0.0001, memory_cap_mb=1500
    )
    assert [c.num_envs for c in profile.asked] == [128, 256, 512]
    assert decisions(result)[(2, 1024)].startswith("pruned: 2,248 MiB predicted")
    model = MemoryModel()
    for n in (128, 256):
        model.add(Candidate(2, n), Profile(True, 1.0, 2 * (100.0 + n)))
    assert model.predict(Candidate(4, 1024)) == pytest.approx(4 * 1124)


def test_the_gmi_sweep_stops_once_fewer_gmis_stop_improving_twice():
    table = {(5, 1): (50, 1), (4, 1): (80, 1), (3, 1): (60, 1), (2, 1): (55, 1), (1, 1): (99, 1)}
    profile = fake(table)
    result = search([Shape(k, (1,)) for k in (5, 4, 3, 2, 1)], profile, measured, alpha=0.1)
    assert [c.per_gpu for c in profile.asked] == [5, 4, 3, 2]
    assert result.best == Candidate(4, 1)
    assert result.ended.startswith("stopped at per_gpu=1")


def test_one_dip_does_not_stop_the_gmi_sweep():
    """Ant on 2 CPU cores as measured: 4 GMIs pinned two to a core beat 3, and 2 beat both."""
    table = {(4, 1): (31.3, 1), (3, 1): (29.9, 1), (2, 1): (36.1, 1), (1, 1): (32.6, 1)}
    profile = fake(table)
    result = search([Shape(k, (1,)) for k in (4, 3, 2, 1)], profile, measured, alpha=0.1)
    assert [c.per_gpu for c in profile.asked] == [4, 3, 2, 1]
    assert result.best == Candidate(2, 1)


def test_shapes_that_do_not_run_do_not_stop_the_sweep():
    profile = fake({(3, 1): "out of memory: x", (2, 1): (60, 1), (1, 1): (99, 1)})
    result = search([Shape(k, (1,)) for k in (3, 2, 1)], profile, measured, alpha=0.1)
    assert result.best == Candidate(1, 1)


def test_the_budget_bounds_the_search_and_the_best_so_far_is_returned():
    now = [0.0]
    lefts = []

    def profile(c, left):
        lefts.append(left)
        now[0] += 10.0
        return Profile(True, 100.0 + 10 * (5 - c.per_gpu), 1.0, seconds=10.0)

    shapes = [Shape(k, (1,)) for k in (4, 3, 2, 1)]
    result = search(shapes, profile, measured, alpha=0.1, budget_s=25, clock=lambda: now[0])
    assert lefts == [25, 15]  # each trial gets what is left; a third would not fit
    assert result.ended == "the time budget ran out"
    assert result.best == Candidate(3, 1)


def test_nothing_runnable_returns_no_best_with_every_reason():
    profile = fake({(1, 1): "crash: a", (2, 1): "hang: b"})
    result = search([Shape(2, (1,)), Shape(1, (1,))], profile, measured, alpha=0.1)
    assert result.best is None and result.projected == -math.inf
    assert [r.decision for r in result.rows] == ["not runnable: hang: b", "not runnable: crash: a"]


def test_close_candidates_are_measured_again_and_decided_on_the_mean():
    """The first trials rank 1 GMI level with 2 (a slow trial of 2); measured again, 2 wins."""
    runs = {(2, 768): [32.3, 37.5], (1, 1536): [31.9, 31.5], (3, 512): [29.4]}
    asked = []

    def profile(c, left):
        asked.append((c.per_gpu, c.num_envs))
        return Profile(True, runs[(c.per_gpu, c.num_envs)].pop(0), 1.0, seconds=1)

    shapes = [Shape(3, (512,)), Shape(2, (768,)), Shape(1, (1536,))]
    result = search(shapes, profile, measured, alpha=0.1)
    assert asked == [(3, 512), (2, 768), (1, 1536), (2, 768), (1, 1536)]  # 3 is not close
    assert result.best == Candidate(2, 768)
    assert result.projected == pytest.approx((32.3 + 37.5) / 2)
    assert [r.decision for r in result.rows][-2:] == [
        "chosen",
        "re-measured (projection: mean of 2 trials)",
    ]
    assert result.trials == 5
