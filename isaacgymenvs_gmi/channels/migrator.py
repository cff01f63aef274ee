"""The migrator (paper Sec. 4.2): routes chunks from actors to trainers.

Each chunk goes whole to the trainer with the most free credit. There a :class:`Collector`
rebuilds it from the slots into ``(T, N, *shape)`` tensors of every kind, on the device of the
route's data, then frees the slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from .kinds import KindSpec
from .route import Route


def pick_route(routes: Sequence[Route]) -> int:
    """Index of the route with the most free credit (the first among equals)."""
    return max(range(len(routes)), key=lambda i: routes[i].free())


@dataclass
class Chunk:
    """One actor's chunk, whole: kind -> (T, N, *shape) tensors."""

    actor: int
    seq: int
    route_seq: int
    data: dict[str, torch.Tensor]
    _missing: int = field(default=0, repr=False)  # steps x channels still to arrive

    @property
    def transitions(self) -> int:
        t = self.data["rewards"]
        return t.shape[0] * t.shape[1]


class Collector:
    """A trainer's receiving end over ``routes`` (index = position in ``actors``)."""

    def __init__(self, actors: Sequence[int], routes: Sequence[Route], kinds: Sequence[KindSpec]):
        self.actors, self.routes, self.kinds = list(actors), list(routes), tuple(kinds)
        self._open: dict[tuple[int, int], Chunk] = {}

    def poll(self) -> list[Chunk]:
        """Take every published block; return the chunks made whole, in each actor's order."""
        done: list[Chunk] = []
        for actor, route in zip(self.actors, self.routes, strict=True):
            for ring in route.rings:
                while (item := ring.poll()) is not None:
                    header, rows = item
                    chunk = self._chunk(
                        actor, header.route_seq, header.seq, header.chunk_steps, route
                    )
                    ring.shape.channel.unpack(rows, chunk.data, at=header.step0)
                    ring.release()
                    chunk._missing -= header.steps
                    if chunk._missing == 0:
                        done.append(self._open.pop((actor, header.route_seq)))
        done.sort(key=lambda c: (c.actor, c.route_seq))
        return done

    def _chunk(self, actor: int, route_seq: int, seq: int, steps: int, route: Route) -> Chunk:
        key = (actor, route_seq)
        chunk = self._open.get(key)
        if chunk is None:
            envs = route.rings[0].shape.envs
            data = {k.name: k.empty(steps, envs, route.device) for k in self.kinds}
            chunk = self._open[key] = Chunk(actor, seq, route_seq, data, steps * len(route.rings))
        return chunk

    def partial(self) -> int:
        """Chunks begun but not whole (an actor stopped or died mid-chunk)."""
        return len(self._open)

    def depth(self) -> int:
        """Chunks published to this trainer and not yet taken."""
        return sum(route.depth() for route in self.routes)
