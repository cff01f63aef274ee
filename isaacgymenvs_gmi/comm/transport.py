"""Which transport carries each reduction group of a GMI layout.

Across devices: torch.distributed (gloo on the host). Inside a device: a shared-memory segment
when ``gmi.intra_device`` allows it and the platform supports it, else the same gloo groups.
"""

from __future__ import annotations

import os

from isaacgymenvs_gmi.gmi.layout import GmiLayout

from .collectives import Collectives, RoutedCollectives, TorchCollectives
from .reduction import groups_for
from .shm import SharedMemoryCollectives, shm_supported


def intra_device_transport(requested: str) -> str:
    """The transport ``gmi.intra_device=requested`` resolves to on this machine."""
    if requested == "auto":
        return "shm" if shm_supported() else "gloo"
    if requested == "shm" and not shm_supported():
        raise RuntimeError("gmi.intra_device=shm needs an x86-64 host; use auto or gloo")
    return requested


def build_collectives(
    rank: int, layout: GmiLayout, intra_device: str, store, timeout_s: float
) -> tuple[Collectives, str]:
    """This GMI's transport for every group of :func:`groups_for` (call on every GMI: group
    creation is collective). Returns it with the intra-device transport's name."""
    remote = TorchCollectives(rank, groups_for(layout), timeout_s)
    transport = intra_device_transport(intra_device)
    place = layout.place(rank)
    device_group = tuple(layout.mpl()[place.device])
    if transport == "gloo" or len(device_group) == 1:
        return remote, transport
    local = SharedMemoryCollectives(
        rank,
        device_group,
        store,
        key=f"gmi/shm/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/device{place.device}",
        timeout_s=timeout_s,
    )
    return RoutedCollectives(local, device_group, remote), transport
