"""Time candidate collectives (:func:`median_seconds`), then agree on the fastest across all GMIs
(:func:`agree_on_fastest`: one all-reduce, so every GMI picks the same winner). Collective when
the candidates are: every GMI calls them with the same candidates, in the same order.
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
    """Median seconds of one call of each candidate over ``rounds`` timed rounds after a warm-up
    round; round ``r`` rotates the order left by ``r``. Before each call ``setup`` (if any) and
    ``wait`` run untimed; ``wait`` runs again before the clock stops (:func:`wait_for_device`)."""
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
    passing its own ``local_seconds`` (same keys, same order). ``all_reduce`` sums a float64 CPU
    tensor ``(len(local_seconds),)`` in place, called once. The choice is the lowest mean (first
    on a tie), unless ``prefer``'s is within ``tolerance`` times it (``<=``)."""
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
