"""The dispenser (paper Sec. 4.2): one per actor, it splits each env step's experience by kind
into the channels of the route the migrator chose for the current chunk; after ``chunk_steps``
steps the chunk is counted as produced on its route (the ledger balances against that count).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch

from .compressor import Compressor
from .migrator import pick_route
from .route import Route, wait_until


class Dispenser:
    """Actor ``actor``'s sending end over ``routes`` (one per trainer); ``deadline_s``: the
    compressor's; ``abort``: true once the run is stopping (a wait for credit then raises
    :class:`~.route.ChannelClosed`)."""

    def __init__(
        self, actor: int, routes: Sequence[Route], deadline_s: float, abort: Callable[[], bool]
    ):
        self.actor, self.routes = actor, list(routes)
        self.chunk_steps = self.routes[0].shape.chunk_steps
        self.compressors = [
            [Compressor(ring, deadline_s, abort) for ring in route.rings] for route in self.routes
        ]
        self.seq = 0  # chunks started
        self.route_seq = [0] * len(self.routes)
        self.abort = abort
        self._route: int | None = None  # the current chunk's route, once begun
        self._step = 0

    def begin_chunk(self) -> None:
        """Pick the next chunk's route and wait for a credit there (a chunk's policy version is
        never fixed long before it can be sent); raises :class:`~.route.ChannelClosed` when the
        run stops meanwhile."""
        if self._route is not None:
            return
        r = pick_route(self.routes)

        def room() -> bool:
            self.beat()  # alive, waiting for a trainer: not hung
            return self.routes[r].free() > 0

        wait_until(room, self.abort)
        self._route = r

    def beat(self) -> None:
        """Tell every trainer this actor is alive now (its routes' heartbeats)."""
        for route in self.routes:
            route.beat()

    def push(self, step: Mapping[str, torch.Tensor]) -> None:
        """One env step: kind -> (N, *shape) tensors (every kind of the channels), on any
        device: they are copied into the slots, on the host or on the route's GPU."""
        self.begin_chunk()
        route, r = self.routes[self._route], self._route
        head = (self.actor, self.seq, self.route_seq[r], self.chunk_steps)
        block = {name: t.unsqueeze(0) for name, t in step.items()}
        for compressor in self.compressors[r]:
            compressor.add(block, self._step, head)
        self._step += 1
        if self._step == self.chunk_steps:
            envs = next(iter(step.values())).shape[0]
            route.count_produced(self.chunk_steps * envs)
            self.route_seq[r] += 1
            self.seq += 1
            self._step, self._route = 0, None

    @property
    def at_last_step(self) -> bool:
        """The next :meth:`push` completes a chunk."""
        return self._step == self.chunk_steps - 1

    @property
    def transfers(self) -> int:
        """Blocks published over every channel and route."""
        return sum(c.transfers for route in self.compressors for c in route)
