"""A serving GMI's numbers, sent to GMI 0 at the end, and what GMI 0 says of all of them."""

from __future__ import annotations

from dataclasses import astuple, dataclass, fields

import torch


@dataclass(frozen=True)
class Played:
    """What one GMI (or, merged, the run) served.

    Attributes:
        steps: env steps of all its envs (= predictions, actions produced).
        timed_steps, timed_s: steps and seconds after the first chunk (warm-up excluded).
        episodes, return_sum, length_sum: episodes finished and their summed return / length.
        produced: transitions the dispenser counted; consumed: transitions the collector took
            back, checked exactly once and in order.
        stopped_by: the signal that stopped the serving early, or 0.
    """

    steps: int
    timed_steps: int
    timed_s: float
    episodes: int
    return_sum: float
    length_sum: float
    produced: int
    consumed: int
    stopped_by: int = 0

    def vector(self) -> torch.Tensor:
        """(9,) float64, for a gather (counts below 2**53 stay exact)."""
        return torch.tensor([float(v) for v in astuple(self)], dtype=torch.float64)

    @classmethod
    def from_vector(cls, v: torch.Tensor) -> Played:
        pairs = zip(fields(cls), v.tolist(), strict=True)
        return cls(*(float(x) if f.type in ("float", float) else int(x) for f, x in pairs))

    @classmethod
    def merge(cls, parts: list[Played]) -> Played:
        """The run: counts summed; time is the slowest GMI's (GMIs play side by side)."""
        return cls(
            steps=sum(p.steps for p in parts),
            timed_steps=sum(p.timed_steps for p in parts),
            timed_s=max(p.timed_s for p in parts),
            episodes=sum(p.episodes for p in parts),
            return_sum=sum(p.return_sum for p in parts),
            length_sum=sum(p.length_sum for p in parts),
            produced=sum(p.produced for p in parts),
            consumed=sum(p.consumed for p in parts),
            stopped_by=max(p.stopped_by for p in parts),
        )

    @property
    def pps(self) -> float:
        """Predictions per second after warm-up (merged: over the slowest GMI's time)."""
        return self.timed_steps / self.timed_s if self.timed_s > 0 else 0.0

    @property
    def mean_reward(self) -> float | None:
        return self.return_sum / self.episodes if self.episodes else None

    @property
    def mean_length(self) -> float | None:
        return self.length_sum / self.episodes if self.episodes else None


def summary_lines(parts: list[Played], envs_per_gmi: int, total: Played) -> list[str]:
    """GMI 0's report: rates per GMI and in total, episodes, the exactly-once check."""
    rates = [p.pps for p in parts]
    reward = "-" if total.mean_reward is None else f"{total.mean_reward:.2f}"
    length = "-" if total.mean_length is None else f"{total.mean_length:.1f}"
    if total.produced != total.consumed:
        raise RuntimeError(
            f"serving lost experience: produced {total.produced:,} != taken {total.consumed:,}"
        )
    return [
        f"served {total.steps:,} predictions on {len(parts)} GMI(s) x {envs_per_gmi} envs | "
        f"PPS {total.pps:,.0f} (GMIs {' '.join(f'{r:,.0f}' for r in rates)}) | "
        f"episodes {total.episodes:,} | mean reward {reward} | mean length {length}",
        f"every chunk taken exactly once and in order: produced {total.produced:,} = "
        f"taken {total.consumed:,}",
    ]
