"""The batcher (paper Sec. 4.2): one per trainer, it turns whole chunks into training batches
of ``horizon_length`` x ``numEnvs`` transitions.

Chunks shorter than the horizon are stacked along the env axis (each env column keeps its time
order, as V-trace needs); longer ones are sliced along it. A chunk whose oldest step is more than
``max_lag`` policy versions behind the trainer is dropped, counted in the ledger.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import torch

from .ledger import Ledger
from .migrator import Chunk


@dataclass
class LagStats:
    """Policy lag (trainer version - the chunk's oldest version) of the chunks trained on."""

    count: int = 0
    total: int = 0
    low: int | None = None
    high: int | None = None
    recent: list[int] = field(default_factory=list)
    histogram: dict[int, int] = field(default_factory=dict)  # lag -> chunks

    def add(self, lag: int) -> None:
        self.histogram[lag] = self.histogram.get(lag, 0) + 1
        self.count += 1
        self.total += lag
        self.low = lag if self.low is None else min(self.low, lag)
        self.high = lag if self.high is None else max(self.high, lag)
        self.recent.append(lag)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def take_recent(self) -> list[int]:
        out, self.recent = self.recent, []
        return out


def batch_geometry(horizon: int, num_envs: int, chunk_steps: int) -> tuple[int, int]:
    """(chunks per batch, env slices per chunk) for batches of ``horizon`` x ``num_envs``.
    Raises ValueError when the chunk length neither divides the horizon nor is a multiple of
    it that splits the envs evenly."""
    if horizon % chunk_steps == 0:
        return horizon // chunk_steps, 1
    if chunk_steps % horizon == 0 and num_envs % (chunk_steps // horizon) == 0:
        return 1, chunk_steps // horizon
    raise ValueError(
        f"chunk_steps={chunk_steps} must divide horizon_length={horizon}, or be a multiple of "
        f"it that divides numEnvs={num_envs}"
    )


class Batcher:
    """Whole chunks in, training batches out (kind -> (T_c, envs, *shape))."""

    def __init__(self, horizon: int, num_envs: int, chunk_steps: int, max_lag: int, ledger: Ledger):
        self.per_batch, self.slices = batch_geometry(horizon, num_envs, chunk_steps)
        self.max_lag, self.ledger = max_lag, ledger
        self._chunks: deque[Chunk] = deque()
        self._pieces: deque[tuple[Chunk, dict[str, torch.Tensor]]] = deque()
        self.lag = LagStats()

    def add(self, chunks: list[Chunk]) -> None:
        self._chunks.extend(chunks)

    def waiting(self) -> int:
        """Chunks held, not yet trained on."""
        return len(self._chunks) + len({id(c) for c, _ in self._pieces})

    def next_batch(self, version: int) -> dict[str, torch.Tensor] | None:
        """The next batch for a trainer at policy ``version``, or None until enough fresh
        chunks are in. Chunks too old are dropped here (and accounted)."""
        while len(self._pieces) < self.per_batch and self._chunks:
            chunk = self._chunks.popleft()
            lag = version - int(chunk.data["version"].min())
            if lag > self.max_lag:
                self.ledger.accept(chunk.actor, chunk.route_seq, chunk.transitions, "dropped")
                continue
            self.ledger.check(chunk.actor, chunk.route_seq)  # counted when trained on
            self.lag.add(lag)
            self._pieces.extend((chunk, piece) for piece in _slice(chunk.data, self.slices))
        if len(self._pieces) < self.per_batch:
            return None
        taken = [self._pieces.popleft()[1] for _ in range(self.per_batch)]
        self.ledger.count("consumed", sum(_transitions(p) for p in taken))
        if len(taken) == 1:
            return taken[0]
        return {k: torch.cat([p[k] for p in taken], dim=1) for k in taken[0]}

    def put_back(self, batch: dict[str, torch.Tensor]) -> None:
        """A batch :meth:`next_batch` gave out that was never trained on (the run stopped
        first): its transitions count as in flight, not consumed."""
        transitions = _transitions(batch)
        self.ledger.count("consumed", -transitions)
        self.ledger.count("in_flight", transitions)

    def drain(self) -> int:
        """At stop: account every held chunk as in flight; returns the transitions."""
        total = 0
        for chunk in self._chunks:
            self.ledger.accept(chunk.actor, chunk.route_seq, chunk.transitions, "in_flight")
            total += chunk.transitions
        self._chunks.clear()
        for _, piece in self._pieces:  # checked, never trained on
            self.ledger.count("in_flight", _transitions(piece))
            total += _transitions(piece)
        self._pieces.clear()
        return total


def _transitions(piece: dict[str, torch.Tensor]) -> int:
    rewards = piece["rewards"]
    return rewards.shape[0] * rewards.shape[1]


def _slice(data: dict[str, torch.Tensor], slices: int) -> list[dict[str, torch.Tensor]]:
    if slices == 1:
        return [data]
    envs = next(iter(data.values())).shape[1] // slices
    return [{k: v[:, i * envs : (i + 1) * envs] for k, v in data.items()} for i in range(slices)]
