"""Time candidate collectives, then agree on the fastest across all GMIs that timed them.

Each GMI times the candidates itself (:func:`median_seconds`); :func:`agree_on_fastest` sums
the timings across GMIs with one all-reduce, so every GMI decides from the same numbers and
picks the same winner. Both are collective when the candidates are: every GMI must call them
with the same candidates, in the same order, the same number of times.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Mapping

import torch


def median_seconds(
    candidates: Mapping[str, Callable[[], object]],
    rounds: int,
    wait: Callable[[], object],
    setup: Callable[[], object] | None = None,
) -> dict[str, float]:
    """Median seconds of one call of each candidate, over ``rounds`` timed rounds after one
    warm-up round (round 0). Round ``r`` runs the candidates in their order rotated left by
    ``r`` (mod their count), so none always runs first. Before each call ``setup`` (if any)
    and ``wait`` run untimed; ``wait`` runs again before the clock stops (e.g.
    :func:`wait_for_device`, so queued device work is timed)."""
    names = list(candidates)
    times: dict[str, list[float]] = {s: [] for s in names}
    for rnd in range(rounds + 1):  # round 0 warms up
        for s in names[rnd % len(names) :] + names[: rnd % len(names)]:
            if setup is not None:
                setup()
            wait()
            t0 = time.perf_counter()
            candidates[s]()
            wait()
            if rnd:
                times[s].append(time.perf_counter() - t0)
    return {s: statistics.median(times[s]) for s in names}


def agree_on_fastest(
    local_seconds: Mapping[str, float],
    all_reduce: Callable[[torch.Tensor], object],
    members: int,
    prefer: str | None = None,
    tolerance: float = 1.0,
) -> tuple[str, dict[str, float]]:
    """The same ``(choice, mean seconds per candidate)`` on every one of ``members`` GMIs, each
    passing its own ``local_seconds`` (same keys, same order everywhere).

    ``all_reduce`` sums a float64 CPU tensor of shape ``(len(local_seconds),)`` in place over
    the members; it is called exactly once. The choice is the lowest mean (the first listed on
    a tie), unless ``prefer``'s mean is within ``tolerance`` times it (``<=``): then ``prefer``.
    """
    names = list(local_seconds)
    total = torch.tensor([local_seconds[s] for s in names], dtype=torch.float64)
    all_reduce(total)  # every member decides from the same numbers
    mean = {s: float(v) / members for s, v in zip(names, total, strict=True)}
    best = min(names, key=mean.__getitem__)
    if prefer is not None and mean[prefer] <= tolerance * mean[best]:
        best = prefer
    return best, mean


def wait_for_device(t: torch.Tensor) -> None:
    """Let queued GPU work on ``t``'s device finish, so a host clock times it."""
    if t.device.type == "cuda":
        torch.cuda.synchronize(t.device)
