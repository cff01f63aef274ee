"""Async throughput as the paper measures it (Sec. 6): predictions per second (PPS, actions
produced), training samples per second (TTOP), per actor and in total, over a sliding window
that starts after warm-up."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass

from isaacgymenvs_gmi.console import timing

WINDOW_S = 10.0


@dataclass
class Rates:
    pps: float  # actions produced per second, all actors
    per_actor: dict[int, float]
    ttop: float  # samples trained on per second, this trainer (all trainers on GMI 0's line)


class AsyncTelemetry:
    """Samples counters at each epoch; rates come from the oldest sample in the window, never
    from before the first trained batch (start-up, compiling and the first chunk excluded)."""

    def __init__(self):
        self._samples: deque[tuple[float, dict[int, int], int]] = deque()

    def sample(self, produced: dict[int, int], consumed: int) -> Rates:
        now = time.monotonic()
        self._samples.append((now, dict(produced), consumed))
        while len(self._samples) > 2 and now - self._samples[1][0] >= WINDOW_S:
            self._samples.popleft()
        t0, produced0, consumed0 = self._samples[0]
        span = now - t0
        if span <= 0:
            return Rates(0.0, {a: 0.0 for a in produced}, 0.0)
        per_actor = {a: (n - produced0.get(a, n)) / span for a, n in produced.items()}
        return Rates(sum(per_actor.values()), per_actor, (consumed - consumed0) / span)


def progress_line(
    epoch: int,
    max_epochs: int,
    rates: Rates,
    lag: tuple[int | None, float | None, int | None],
    queue_depth: int,
    dropped: int,
    reward: float | None,
    elapsed_s: float,
) -> str:
    """The lead trainer's line; ``elapsed_s``: training so far, which with the epochs done and
    left gives the ETA."""
    lo, mean, hi = lag
    lag_text = "-" if mean is None else f"{lo}/{mean:.2f}/{hi}"
    actors = " ".join(f"{v:,.0f}" for _, v in sorted(rates.per_actor.items()))
    reward_text = "-" if reward is None else f"{reward:.2f}"
    epochs = f"{epoch}/{max_epochs}" if max_epochs > 0 else str(epoch)
    line = (
        f"epoch {epochs} | PPS {rates.pps:,.0f} (actors {actors}) | TTOP {rates.ttop:,.0f} | "
        f"lag min/mean/max {lag_text} | queue {queue_depth} | dropped {dropped:,} | "
        f"reward {reward_text}"
    )
    eta = None
    if max_epochs > 0 and epoch > 0:
        eta = elapsed_s / epoch * max(max_epochs - epoch, 0)
    return f"{line} | {timing(elapsed_s, eta)}"
