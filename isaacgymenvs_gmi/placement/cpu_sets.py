"""Disjoint CPU core sets for GMIs on a machine without a GPU (the ``cpu`` GMI backend).

The cores a node may use are split into ``devices`` virtual devices (contiguous blocks), and each
device's block among its GMIs. With more GMIs than cores, GMIs share cores round-robin: allowed,
but the caller warns, since such GMIs contend instead of overlapping.
"""

from __future__ import annotations

import os


def usable_cores() -> list[int]:
    """Cores this process may run on, ascending."""
    return sorted(os.sched_getaffinity(0))


def _blocks(items: list[int], parts: int) -> list[list[int]]:
    """``items`` cut into ``parts`` contiguous blocks whose sizes differ by at most one; with
    fewer items than parts, items repeat round-robin so no block is empty."""
    if len(items) < parts:
        return [[items[i % len(items)]] for i in range(parts)]
    base, extra = divmod(len(items), parts)
    out, start = [], 0
    for p in range(parts):
        size = base + (p < extra)
        out.append(items[start : start + size])
        start += size
    return out


def split_cores(cores: list[int], devices: int, per_device: int) -> list[list[int]]:
    """Core set of every GMI on a node, in local-rank order (device-major)."""
    if not cores:
        raise ValueError("no usable cores")
    return [gmi for block in _blocks(cores, devices) for gmi in _blocks(block, per_device)]


def oversubscribed(cores: list[int], devices: int, per_device: int) -> bool:
    return devices * per_device > len(cores)
