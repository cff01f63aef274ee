"""The collectives reduction strategies need: ``TorchCollectives`` (torch.distributed: gloo on
the host, NCCL across GPUs) and its in-process twin ``ThreadCollectives`` (one thread per
simulated GMI). Groups are tuples of GMI ids; :mod:`.routing` picks each group's transport.
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
    """torch.distributed groups, built from the same list on every GMI (group creation is
    collective); ``timeout_s`` bounds every collective. ``backend`` None: the default group's
    (gloo, host tensors), everyone being the default group itself. ``backend="nccl"``: tensors
    on ``device``; NCCL refuses two members on one GPU, so only groups spanning distinct GPUs."""

    def __init__(
        self,
        rank: int,
        groups: list[Group],
        timeout_s: float = 1800.0,
        backend: str | None = None,
        device: torch.device | str = "cpu",
    ):
        from datetime import timedelta

        import torch.distributed as dist

        self.rank, self._dist = rank, dist
        self.device = torch.device(device)
        self._handles = {}
        timeout = timedelta(seconds=timeout_s)
        world = tuple(range(dist.get_world_size()))
        for g in dict.fromkeys(tuple(sorted(g)) for g in groups):
            if len(g) > 1 and (g != world or backend is not None):
                self._handles[g] = dist.new_group(list(g), timeout=timeout, backend=backend)
            else:
                self._handles[g] = None  # a single GMI, or everyone: the default group

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
        self.reduce(t, self.rank, group)

    def reduce(self, t, dst, group):
        if len(group) > 1:
            seen = self._exchange(t, group)
            if self.rank == dst:
                t.copy_(sum(seen[r] for r in sorted(seen)))

    def broadcast(self, t, src, group):
        if len(group) > 1:
            seen = self._exchange(t, group)
            t.copy_(seen[src])
