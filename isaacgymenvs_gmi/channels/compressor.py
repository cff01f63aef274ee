"""The compressor (paper Sec. 4.2): grows one channel's transfers to a transfer size.

Steps are packed straight into the slot the compressor holds on the ring; the slot is published
when full, when the chunk ends, or ``deadline_s`` after its first step. With one-step slots (the
uni-channel baseline) every step is its own transfer.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

from .route import Header, Ring


class Compressor:
    """One channel of one route, on the actor side."""

    def __init__(self, ring: Ring, deadline_s: float, abort: Callable[[], bool]):
        self.ring, self.deadline_s, self.abort = ring, deadline_s, abort
        self.spec = ring.shape.channel
        self._rows: torch.Tensor | None = None
        self._fill = 0
        self._step0 = 0
        self._since = 0.0
        self.transfers = 0  # blocks published

    def add(
        self, step: dict[str, torch.Tensor], at_step: int, head: tuple[int, int, int, int]
    ) -> None:
        """Pack one step ((1, N, *shape) per kind) as step ``at_step`` of the chunk
        ``head`` = (actor, seq, route_seq, chunk_steps); publish when the transfer is full."""
        if self._rows is None:
            self._rows = self.ring.reserve(self.abort)  # waits for a credit
            self._fill, self._step0, self._since = 0, at_step, time.monotonic()
        self.spec.pack(self._rows, step, at=self._fill)
        self._fill += 1
        full = self._fill == self._rows.shape[0] or at_step + 1 == head[3]  # or chunk's end
        if full or time.monotonic() - self._since > self.deadline_s:
            self.flush(head)

    def flush(self, head: tuple[int, int, int, int]) -> None:
        """Publish what the held slot has."""
        if self._rows is None or self._fill == 0:
            return
        actor, seq, route_seq, chunk_steps = head
        self.ring.commit(
            Header(actor, seq, route_seq, self.spec.index, self._step0, self._fill, chunk_steps)
        )
        self._rows, self._fill = None, 0
        self.transfers += 1
