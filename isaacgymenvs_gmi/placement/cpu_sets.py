"""CPU core sets for GMIs on a machine without a GPU (the ``cpu`` GMI backend).

The cores a node may use are split into ``devices`` virtual devices (contiguous blocks). Within a
device, two ways (``gmi.cores``):

- ``pinned``: the block is cut into disjoint core sets, one per GMI, each GMI's pools sized to
  its set. With more GMIs than cores, GMIs share cores round-robin, so some cores carry two GMIs
  while others carry one; in lockstep training the doubly-loaded GMIs gate the rest. GMIs that
  must not wait on a shared core (async trainers, the paper's own-slice template) can be given
  cores of their own first; the other GMIs of the device then share what is left.
- ``shared``: every GMI of the device may run on the whole block, with every pool sized to its
  share (cores // GMIs, at least 1) so the device runs about as many threads as it has cores,
  and the OS balances the GMIs over the cores; waits between GMIs yield the core.

``auto`` chooses ``shared`` when a device has fewer cores than GMIs in sync and serve mode
(measured: ``bench/gmi_scaling.py``), else ``pinned`` (async trainers keep their own cores).
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def usable_cores() -> list[int]:
    """Cores this process may run on, ascending."""
    return sorted(os.sched_getaffinity(0))


def _blocks(items: list[int], parts: int, own: int = 0) -> list[list[int]]:
    """``items`` cut into ``parts`` contiguous blocks whose sizes differ by at most one; with
    fewer items than parts, the first ``own`` parts get an item each (when that leaves one for
    the rest) and the other parts repeat the remaining items round-robin, so no block is
    empty."""
    if len(items) < parts:
        own = own if own < len(items) else 0
        rest = items[own:]
        return [[items[p]] if p < own else [rest[(p - own) % len(rest)]] for p in range(parts)]
    base, extra = divmod(len(items), parts)
    out, start = [], 0
    for p in range(parts):
        size = base + (p < extra)
        out.append(items[start : start + size])
        start += size
    return out


def split_cores(
    cores: list[int], devices: int, per_device: int, own: Sequence[int] = ()
) -> list[list[int]]:
    """Core set of every GMI on a node, in local-rank order (device-major).

    Args:
        own: per device, how many of its first GMIs get cores no other GMI shares (missing
            devices: none).
    """
    if not cores:
        raise ValueError("no usable cores")
    keep = list(own) + [0] * (devices - len(own))
    return [
        gmi
        for d, block in enumerate(_blocks(cores, devices))
        for gmi in _blocks(block, per_device, keep[d])
    ]


def share_cores(cores: list[int], devices: int, per_device: int) -> list[tuple[list[int], int]]:
    """Per GMI of a node, in local-rank order: (its device's whole block, threads it may run)."""
    if not cores:
        raise ValueError("no usable cores")
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
