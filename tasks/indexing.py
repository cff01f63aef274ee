"""Index helpers for jitted task code."""

from __future__ import annotations

import numpy as np


def columns(index: np.ndarray) -> slice | np.ndarray:
    """Column indices as a slice when they are consecutive: XLA reads a slice in place but
    keeps a gather by constant indices as a kernel of its own."""
    index = np.asarray(index)
    if index.size and np.array_equal(index, np.arange(index[0], index[0] + index.size)):
        return slice(int(index[0]), int(index[0]) + index.size)
    return index
