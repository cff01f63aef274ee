"""The few collectives reduction strategies need, behind one interface with two transports.

``TorchCollectives`` runs them through torch.distributed process groups (gloo on the host, NCCL
across GPUs). ``ThreadCollectives`` is its in-process twin: each simulated GMI is a thread, and a
group's members meet at a barrier, so a whole layout runs in one process under a debugger.
Groups are plain tuples of GMI ids; the transport maps them to its own handles.
"""

from __future__ import annotations

import threading
from typing import Protocol

import torch

Group = tuple[int, ...]


class Collectives(Protocol):
    rank: int

    def all_reduce(self, t: torch.Tensor, group: Group) -> None: ...  # in place, sum

    def reduce(self, t: torch.Tensor, dst: int, group: Group) -> None: ...  # sum into dst

    def broadcast(self, t: torch.Tensor, src: int, group: Group) -> None: ...


class TorchCollectives:
    """torch.distributed groups, built from the same list on every GMI (creating a group is
    itself collective). ``timeout_s`` bounds every collective: a group made without one would
    wait torch's default 30 minutes for a hung GMI."""

    def __init__(self, rank: int, groups: list[Group], timeout_s: float = 1800.0):
        from datetime import timedelta

        import torch.distributed as dist

        self.rank, self._dist = rank, dist
        self._handles = {}
        timeout = timedelta(seconds=timeout_s)
        world = tuple(range(dist.get_world_size()))
        for g in dict.fromkeys(tuple(sorted(g)) for g in groups):
            self._handles[g] = dist.new_group(list(g), timeout=timeout) if len(g) > 1 else None
        if world in self._handles:
            self._handles[world] = None  # everyone: the default group (its connections are warm)

    def _group(self, group: Group):
        return self._handles[tuple(sorted(group))]

    def all_reduce(self, t, group):
        if len(group) > 1:
            self._dist.all_reduce(t, group=self._group(group))

    def reduce(self, t, dst, group):
        if len(group) > 1:
            self._dist.reduce(t, dst, group=self._group(group))

    def broadcast(self, t, src, group):
        if len(group) > 1:
            self._dist.broadcast(t, src, group=self._group(group))


class ThreadHub:
    """Shared state of a simulated world: one mailbox per group per operation round."""

    def __init__(self, world_size: int):
        self.world_size = world_size
        self._lock = threading.Lock()
        self._rooms: dict[Group, tuple[threading.Barrier, dict[int, torch.Tensor]]] = {}

    def room(self, group: Group):
        with self._lock:
            if group not in self._rooms:
                self._rooms[group] = (threading.Barrier(len(group)), {})
            return self._rooms[group]


class ThreadCollectives:
    """In-process twin of TorchCollectives for GMI ``rank`` of ``hub``'s simulated world."""

    def __init__(self, rank: int, hub: ThreadHub):
        self.rank, self.hub = rank, hub

    def _exchange(self, t: torch.Tensor, group: Group) -> dict[int, torch.Tensor]:
        group = tuple(sorted(group))
        barrier, box = self.hub.room(group)
        box[self.rank] = t.clone()
        barrier.wait()  # everyone has posted
        seen = {r: box[r] for r in group}
        barrier.wait()  # everyone has read; the box may be reused
        return seen

    def all_reduce(self, t, group):
        if len(group) > 1:
            seen = self._exchange(t, group)
            t.copy_(sum(seen[r] for r in sorted(seen)))

    def reduce(self, t, dst, group):
        if len(group) > 1:
            seen = self._exchange(t, group)
            if self.rank == dst:
                t.copy_(sum(seen[r] for r in sorted(seen)))

    def broadcast(self, t, src, group):
        if len(group) > 1:
            seen = self._exchange(t, group)
            t.copy_(seen[src])


class RoutedCollectives:
    """Collectives over this GMI's own device group go to ``local`` (e.g. shared memory); all
    other groups go to ``remote`` (torch.distributed)."""

    def __init__(self, local: Collectives, device_group: Group, remote: Collectives):
        self.rank = remote.rank
        self.local, self.remote = local, remote
        self.device_group = tuple(sorted(device_group))

    def _route(self, group: Group) -> Collectives:
        return self.local if tuple(sorted(group)) == self.device_group else self.remote

    def all_reduce(self, t, group):
        if len(group) > 1:
            self._route(group).all_reduce(t, group)

    def reduce(self, t, dst, group):
        if len(group) > 1:
            self._route(group).reduce(t, dst, group)

    def broadcast(self, t, src, group):
        if len(group) > 1:
            self._route(group).broadcast(t, src, group)
