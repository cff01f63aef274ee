"""Exactly-once accounting of chunks: every chunk an actor produces is consumed, dropped (too
old for the policy) or still in flight at the end, once, and in the actor's order; a duplicate,
a gap or a chunk out of order raises :class:`ExactlyOnceError`. At the end the run states
``produced = consumed + dropped for lag + in flight at stop`` (:func:`balance_line`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

Outcome = Literal["consumed", "dropped", "in_flight"]


class ExactlyOnceError(RuntimeError):
    """A chunk arrived twice, out of order, or after a gap in its actor's stream."""


@dataclass
class Ledger:
    """Per-actor sequence checks and transition counts (a transition is one env step)."""

    next_seq: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    consumed: int = 0
    dropped: int = 0
    in_flight: int = 0

    def accept(self, actor: int, seq: int, transitions: int, outcome: Outcome = "consumed") -> None:
        """Account for chunk ``seq`` of ``actor`` holding ``transitions``."""
        self.check(actor, seq)
        self.count(outcome, transitions)

    def check(self, actor: int, seq: int) -> None:
        """Chunk ``seq`` of ``actor`` is the next one of its stream (raises otherwise)."""
        expected = self.next_seq[actor]
        if seq != expected:
            what = "again" if seq < expected else f"before chunk {expected}"
            raise ExactlyOnceError(f"actor {actor}: chunk {seq} arrived {what}")
        self.next_seq[actor] = seq + 1

    def count(self, outcome: Outcome, transitions: int) -> None:
        """Add ``transitions`` of chunks already checked to ``outcome``."""
        setattr(self, outcome, getattr(self, outcome) + transitions)

    def totals(self) -> tuple[int, int, int]:
        return self.consumed, self.dropped, self.in_flight


def balance_line(produced: int, consumed: int, dropped: int, in_flight: int) -> str:
    """``produced = consumed + dropped + in flight`` as a line; raises when it does not hold."""
    line = (
        f"produced {produced:,} = consumed {consumed:,} + dropped for lag {dropped:,} + "
        f"in flight at stop {in_flight:,}"
    )
    if produced != consumed + dropped + in_flight:
        raise ExactlyOnceError("unbalanced: " + line)
    return line
