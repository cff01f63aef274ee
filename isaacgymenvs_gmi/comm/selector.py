"""Algorithm 1 of the paper: which reduction strategy a GMI layout calls for.

An ordered table of (condition, strategy); the first matching row wins. ``MPL`` is the
GMI-to-GPU mapping list, e.g. ``[[0, 1, 2], [3, 4, 5]]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

Strategy = Literal["mpr", "mrr", "har"]
MPL = Sequence[Sequence[int]]

RULES: tuple[tuple[str, Callable[[MPL], bool], Strategy], ...] = (
    ("all GMIs on one GPU", lambda mpl: len(mpl) <= 1, "mpr"),
    ("GPUs hold different numbers of GMIs", lambda mpl: len({len(r) for r in mpl}) > 1, "har"),
    ("more GMIs per GPU than GPUs", lambda mpl: len(mpl[0]) > len(mpl), "har"),
    ("otherwise", lambda mpl: True, "mrr"),
)


def select_strategy(mpl: MPL) -> Strategy:
    """The strategy Algorithm 1 picks for ``mpl``."""
    return next(strategy for _, applies, strategy in RULES if applies(mpl))


def mrr_valid(mpl: MPL) -> bool:
    """MRR needs as many GMIs on every GPU, and no more GMIs per GPU than GPUs."""
    return len(mpl) > 1 and len({len(r) for r in mpl}) == 1 and len(mpl[0]) <= len(mpl)
