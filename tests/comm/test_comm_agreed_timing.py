"""Timing candidates and agreeing on the fastest across GMIs (comm/agreed_timing.py): every GMI
reaches the same choice from its own timings, the preferred candidate is kept within the
tolerance and dropped beyond it, ties go the documented way, and timing skips the warm-up round
and rotates the order."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest
import torch

from isaacgymenvs_gmi.comm import agreed_timing
from isaacgymenvs_gmi.comm.agreed_timing import agree_on_fastest, median_seconds
from isaacgymenvs_gmi.comm.collectives import ThreadCollectives, ThreadHub


def agree_all(locals_: list[dict[str, float]], **kwargs) -> list[tuple[str, dict[str, float]]]:
    """:func:`agree_on_fastest` on one thread per member (``locals_[r]``: member r's timings),
    summing over the in-process twin of a collective; each member's result, by rank."""
    world = len(locals_)
    group = tuple(range(world))
    hub, out = ThreadHub(world), {}

    def member(rank: int) -> None:
        comm = ThreadCollectives(rank, hub)
        out[rank] = agree_on_fastest(
            locals_[rank], lambda t: comm.all_reduce(t, group), world, **kwargs
        )

    threads = [threading.Thread(target=member, args=(r,), daemon=True) for r in group]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert sorted(out) == list(group), "a member hung or failed"
    return [out[r] for r in group]


def test_members_with_different_timings_reach_the_same_choice_and_means():
    """Alone, member 0 would pick a, member 1 b and member 2 c; together they pick b, the
    lowest mean, and all see the same means."""
    locals_ = [
        {"a": 1.0, "b": 2.0, "c": 9.0},
        {"a": 9.0, "b": 1.0, "c": 2.0},
        {"a": 3.0, "b": 1.5, "c": 1.0},
    ]
    results = agree_all(locals_)
    expected = {"a": 13.0 / 3, "b": 4.5 / 3, "c": 12.0 / 3}
    for choice, mean in results:
        assert choice == "b"
        assert list(mean) == ["a", "b", "c"]
        assert mean == pytest.approx(expected, rel=1e-12)
    assert all(mean == results[0][1] for _, mean in results)  # bit for bit


@pytest.mark.parametrize(
    "prefer_mean,kept", [(1.01, True), (1.02, True), (1.021, False), (1.5, False)]
)
def test_the_preferred_candidate_is_kept_within_the_tolerance_and_dropped_beyond(prefer_mean, kept):
    """Two members whose timings average to ``prefer_mean`` for the prior and 1.0 for the best;
    tolerance 2% as the tuned reduction uses it."""
    locals_ = [
        {"mpr": 2 * prefer_mean - 0.5, "har": 1.5},
        {"mpr": 0.5, "har": 0.5},
    ]
    for choice, mean in agree_all(locals_, prefer="mpr", tolerance=1.02):
        assert mean == pytest.approx({"mpr": prefer_mean, "har": 1.0}, rel=1e-12)
        assert choice == ("mpr" if kept else "har")


def test_without_a_tolerance_the_preferred_candidate_must_be_no_slower():
    slower = [{"shm": 1.0, "ipc": 1.0 + 1e-9}, {"shm": 1.0, "ipc": 1.0}]
    assert {c for c, _ in agree_all(slower, prefer="ipc")} == {"shm"}
    faster = [{"shm": 1.0, "ipc": 0.5}, {"shm": 1.0, "ipc": 2.0}]  # mean ipc 1.25: slower
    assert {c for c, _ in agree_all(faster, prefer="ipc")} == {"shm"}
    faster = [{"shm": 3.0, "ipc": 0.5}, {"shm": 1.0, "ipc": 2.0}]  # mean ipc 1.25, shm 2
    assert {c for c, _ in agree_all(faster, prefer="ipc")} == {"ipc"}


@pytest.mark.parametrize("order", [("ipc", "shm"), ("shm", "ipc")])
def test_ties_go_to_the_preferred_candidate_in_any_order(order):
    locals_ = [dict.fromkeys(order, 0.25), dict.fromkeys(order, 0.75)]
    assert {c for c, _ in agree_all(locals_, prefer="ipc")} == {"ipc"}


@pytest.mark.parametrize("order", [("a", "b", "c"), ("c", "b", "a")])
def test_ties_without_a_preference_go_to_the_first_listed(order):
    locals_ = [dict.fromkeys(order, 1.0), {**dict.fromkeys(order, 1.0), "b": 3.0}]
    assert {c for c, _ in agree_all(locals_)} == {order[0]}


def test_all_reduce_is_called_once_with_the_float64_timings_in_their_order():
    seen: list[torch.Tensor] = []

    def all_reduce(t: torch.Tensor) -> None:
        seen.append(t.clone())
        t.mul_(4)  # as if 4 members had the same timings

    choice, mean = agree_on_fastest({"x": 0.5, "y": 0.25, "z": 1.0}, all_reduce, members=4)
    assert len(seen) == 1
    assert seen[0].dtype == torch.float64 and seen[0].device.type == "cpu"
    assert seen[0].tolist() == [0.5, 0.25, 1.0]
    assert (choice, mean) == ("y", {"x": 0.5, "y": 0.25, "z": 1.0})


def test_an_unknown_preference_fails():
    with pytest.raises(KeyError):
        agree_on_fastest({"a": 1.0}, lambda t: None, members=1, prefer="b")


def test_median_seconds_skips_the_warm_up_rotates_and_waits_around_each_call(monkeypatch):
    """Every call takes a scripted time on a fake clock; the log shows setup, wait, call, wait
    for each call, the order rotating by one each round, and round 0's slow calls are not in
    the medians."""
    now = [0.0]
    monkeypatch.setattr(agreed_timing, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    durations = {  # per call of each candidate, in call order; round 0 first
        "a": [100.0, 1.0, 3.0, 2.0],
        "b": [100.0, 5.0, 4.0, 6.0],
        "c": [100.0, 7.0, 7.0, 8.0],
    }
    log: list[str] = []

    def candidate(name: str):
        def run() -> None:
            log.append(name)
            now[0] += durations[name].pop(0)

        return run

    medians = median_seconds(
        {s: candidate(s) for s in "abc"},
        rounds=3,
        wait=lambda: log.append("wait"),
        setup=lambda: log.append("setup"),
    )
    assert medians == {"a": 2.0, "b": 5.0, "c": 7.0}
    assert list(medians) == ["a", "b", "c"]
    calls = [e for e in log if e in "abc"]
    assert calls == list("abcbcacababc")
    assert log == [e for s in calls for e in ("setup", "wait", s, "wait")]


def test_median_seconds_of_one_candidate_without_setup():
    calls = []
    medians = median_seconds({"only": lambda: calls.append(1)}, rounds=4, wait=lambda: None)
    assert len(calls) == 5  # 4 timed + the warm-up
    assert list(medians) == ["only"] and medians["only"] >= 0.0
