"""Exactly-once accounting of chunks: every chunk an actor produces is consumed, dropped (too
old for the policy) or still in flight at the end, once, and in the actor's order.

The trainer calls :meth:`Ledger.accept` for each chunk it takes; a duplicate, a gap or a chunk
out of its actor's order raises :class:`ExactlyOnceError`. At the end the run states
``produced = consumed + dropped + in flight`` (:meth:`Ledger.balance`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field


class ExactlyOnceError(RuntimeError):
    """A chunk arrived twice, out of order, or after a gap in its actor's stream."""


@dataclass
class Ledger:
    """Per-actor sequence checks and transition counts (a transition is one env step)."""

    next_seq: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    consumed: int = 0
    dropped: int = 0

    def accept(self, actor: int, seq: int, transitions: int, *, keep: bool = True) -> None:
        """Account for chunk ``seq`` of ``actor`` holding ``transitions``; ``keep=False`` counts
        it as dropped (e.g. older than the allowed policy lag)."""
        expected = self.next_seq[actor]
        if seq != expected:
            what = "again" if seq < expected else f"before chunk {expected}"
            raise ExactlyOnceError(f"actor {actor}: chunk {seq} arrived {what}")
        self.next_seq[actor] = seq + 1
        if keep:
            self.consumed += transitions
        else:
            self.dropped += transitions

    def balance(self, produced: int, in_flight: int) -> str:
        """The end-of-run line; raises :class:`ExactlyOnceError` when it does not balance."""
        line = (
            f"produced {produced:,} = consumed {self.consumed:,} + dropped for lag "
            f"{self.dropped:,} + in flight at stop {in_flight:,}"
        )
        if produced != self.consumed + self.dropped + in_flight:
            raise ExactlyOnceError("unbalanced: " + line)
        return line
