"""CPU core sets for GMIs on a machine without a GPU (the ``cpu`` GMI backend).

A node's usable cores are split into ``devices`` contiguous blocks (virtual devices); within one,
``gmi.cores`` is ``pinned`` (disjoint core sets per GMI, pools sized to them; with more GMIs than
cores they share round-robin, but the first ``own`` GMIs, the ones others wait on, can keep cores
of their own) or ``shared`` (every GMI may run on the whole block, each pool sized to cores //
GMIs, at least 1, and the OS balances them). ``auto`` chooses ``shared`` when a device has fewer
cores than GMIs and none keeps its own (measured: ``bench/gmi_scaling.py``), else ``pinned``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def usable_cores() -> list[int]:
    """Cores this process may run on, ascending."""
    return sorted(os.sched_getaffinity(0))


def _blocks(items: list[int], parts: int, own: int = 0) -> list[list[int]]:
    """``items`` cut into ``parts`` contiguous blocks of sizes within one; with fewer items than
    parts, the first ``own`` parts get an item each (if one is left for the rest) and the others
    repeat the remaining items round-robin."""
    if not items:
        raise ValueError("no usable cores")
    if len(items) < parts:
        own = own if own < len(items) else 0
        rest = items[own:]
        return [[items[p]] if p < own else [rest[(p - own) % len(rest)]] for p in range(parts)]
    base, extra = divmod(len(items), parts)
    return [
        items[p * base + min(p, extra) : (p + 1) * base + min(p + 1, extra)] for p in range(parts)
    ]


def split_cores(
    cores: list[int], devices: int, per_device: int, own: Sequence[int] = ()
) -> list[list[int]]:
    """Core set of every GMI on a node, in local-rank order (device-major); ``own``: per device,
    how many of its first GMIs get cores no other GMI shares (missing devices: none)."""
    keep = list(own) + [0] * (devices - len(own))
    return [
        gmi
        for d, block in enumerate(_blocks(cores, devices))
        for gmi in _blocks(block, per_device, keep[d])
    ]


def share_cores(cores: list[int], devices: int, per_device: int) -> list[tuple[list[int], int]]:
    """Per GMI of a node, in local-rank order: (its device's whole block, threads it may run)."""
    return [
        (block, max(1, len(block) // per_device))
        for block in _blocks(cores, devices)
        for _ in range(per_device)
    ]


def oversubscribed(cores: list[int], devices: int, per_device: int) -> bool:
    return devices * per_device > len(cores)


def choose_cores(requested: str, crowded: bool, some_pinned: bool = False) -> str:
    """``pinned`` or ``shared`` for ``gmi.cores=requested``; ``crowded``: a device has fewer
    cores than GMIs; ``some_pinned``: some GMIs keep cores of their own (the ones the others
    wait on), which only pinning gives them."""
    if requested != "auto":
        return requested
    return "shared" if crowded and not some_pinned else "pinned"
