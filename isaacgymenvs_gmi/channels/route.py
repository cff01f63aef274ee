"""One actor -> trainer route: a ring of slots per channel plus the actor's counters, in one
buffer that both ends map.

The buffer is either a shared-memory segment (:meth:`Route.create` by the trainer, which
consumes, and :meth:`Route.attach` by the actor, through the run's store) or private memory
(:meth:`Route.in_process`, the in-process twin: the same code, for a single process and tests).

Each ring is single-producer, single-consumer: the producer alone writes ``head`` and the slot
it reserved, the consumer alone writes ``tail``. A slot is published by writing its data, then
its header, then ``head``; x86-64 (TSO) makes stores visible in that order, so a consumer that
sees ``head`` sees the slot whole. Only indices travel; the data is written once into the slot
and read once out of it. Free slots are the producer's credits: with none left it waits
(back-pressure), so memory never grows.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass

import numpy as np
import torch

from isaacgymenvs_gmi.comm.shared_memory import create_segment, map_segment
from isaacgymenvs_gmi.comm.store import Store

from .spec import ChannelSpec

LINE = 64  # bytes: one counter per cache line
HEADER_INTS = 8
CONTROL_LINES = 8
# control words (one cache line each)
PRODUCED_CHUNKS, PRODUCED_TRANSITIONS, ACTOR_STATE, HEARTBEAT_NS, ACTOR_PID = range(5)
STARTING, RUNNING, STOPPED = 0, 1, 2
SPINS_BEFORE_SLEEP = 20


class ChannelClosed(RuntimeError):
    """The other end asked to stop while this end was waiting."""


@dataclass(frozen=True)
class Header:
    """What travels with a block of steps (the slot's index is implied by the ring)."""

    actor: int  # producing actor GMI
    seq: int  # the chunk's number in the actor's whole stream
    route_seq: int  # the chunk's number on this route (checked for exactly once, in order)
    channel: int
    step0: int  # first step of the chunk this block holds
    steps: int  # steps in this block
    chunk_steps: int  # steps of the whole chunk

    def ints(self) -> tuple[int, ...]:
        return astuple(self) + (0,) * (HEADER_INTS - 7)


@dataclass(frozen=True)
class RingShape:
    """A channel's ring: ``capacity`` slots of ``slot_steps`` steps x ``envs`` rows."""

    channel: ChannelSpec
    capacity: int
    slot_steps: int
    envs: int

    @property
    def slot_bytes(self) -> int:
        data = self.slot_steps * self.envs * self.channel.row_bytes
        return _round_up(HEADER_INTS * 8 + data, LINE)

    @property
    def nbytes(self) -> int:
        return 2 * LINE + self.capacity * self.slot_bytes


@dataclass(frozen=True)
class RouteShape:
    """Every channel's ring of a route; a chunk is ``chunk_steps`` steps of every channel."""

    rings: tuple[RingShape, ...]
    chunk_steps: int

    @property
    def nbytes(self) -> int:
        return CONTROL_LINES * LINE + sum(s.nbytes for s in self.rings)


def route_shape(
    channels: tuple[ChannelSpec, ...],
    envs: int,
    chunk_steps: int,
    chunks_in_flight: int,
    compress: bool,
) -> RouteShape:
    """Rings for ``channels``: with ``compress`` a slot holds a whole chunk (the compressor
    grows transfers to it), else one step (every step is its own transfer); either way each
    ring holds ``chunks_in_flight`` chunks."""
    slot_steps = chunk_steps if compress else 1
    capacity = chunks_in_flight * (chunk_steps // slot_steps)
    return RouteShape(
        tuple(RingShape(c, capacity, slot_steps, envs) for c in channels), chunk_steps
    )


def _round_up(n: int, to: int) -> int:
    return (n + to - 1) // to * to


class Ring:
    """One channel's ring inside a route buffer (see the module docstring)."""

    def __init__(self, shape: RingShape, buffer: memoryview, base: int):
        self.shape = shape
        self._counters = np.frombuffer(buffer, dtype=np.int64, count=2 * LINE // 8, offset=base)
        self._slots = torch.frombuffer(
            buffer,
            dtype=torch.uint8,
            count=shape.capacity * shape.slot_bytes,
            offset=base + 2 * LINE,
        ).view(shape.capacity, shape.slot_bytes)
        self._reserved: int | None = None

    # head (producer) and tail (consumer), each on its own cache line
    @property
    def head(self) -> int:
        return int(self._counters[0])

    @property
    def tail(self) -> int:
        return int(self._counters[LINE // 8])

    def depth(self) -> int:
        """Published blocks not yet released by the consumer."""
        return self.head - self.tail

    def free(self) -> int:
        """Credits: slots the producer may still fill."""
        return self.shape.capacity - self.depth()

    def _rows(self, slot: int) -> torch.Tensor:
        s = self.shape
        data = self._slots[
            slot, HEADER_INTS * 8 : HEADER_INTS * 8 + s.slot_steps * s.envs * s.channel.row_bytes
        ]
        return data.view(s.slot_steps, s.envs, s.channel.row_bytes)

    # --- producer ----------------------------------------------------------------------------
    def reserve(self, abort: Callable[[], bool]) -> torch.Tensor:
        """(slot_steps, envs, row_bytes) uint8: the next free slot, waiting for a credit.
        Raises :class:`ChannelClosed` when ``abort()`` turns true while waiting."""
        if self._reserved is None:
            wait_until(lambda: self.free() > 0, abort)
            self._reserved = self.head % self.shape.capacity
        return self._rows(self._reserved)

    def commit(self, header: Header) -> None:
        """Publish the reserved slot with ``header``."""
        assert self._reserved is not None, "commit without reserve"
        ints = np.frombuffer(self._slots[self._reserved, : HEADER_INTS * 8].numpy(), dtype=np.int64)
        ints[:] = header.ints()
        self._reserved = None
        self._counters[0] = self.head + 1  # after the data and header: publishes the slot

    # --- consumer ----------------------------------------------------------------------------
    def poll(self) -> tuple[Header, torch.Tensor] | None:
        """The oldest published block as (header, (steps, envs, row_bytes) view into the slot),
        or None. Call :meth:`release` when done with the view."""
        tail = self.tail
        if tail >= self.head:
            return None
        slot = tail % self.shape.capacity
        ints = np.frombuffer(self._slots[slot, : HEADER_INTS * 8].numpy(), dtype=np.int64)
        header = Header(*(int(v) for v in ints[:7]))
        return header, self._rows(slot)[: header.steps]

    def release(self) -> None:
        """Give the oldest slot back to the producer (one credit)."""
        self._counters[LINE // 8] = self.tail + 1

    # --- mirroring: a copy of the ring at the other end of a network link (:mod:`.p2p`) ----
    def slot(self, block: int) -> torch.Tensor:
        """(slot_bytes,) uint8, contiguous: the whole slot (header and data) of the ``block``-th
        block since the start."""
        return self._slots[block % self.shape.capacity]

    def mirror_published(self) -> None:
        """The consumer's copy: the slot at ``head`` now holds the producer's next block."""
        self._counters[0] = self.head + 1

    def mirror_released(self, tail: int) -> None:
        """The producer's copy: the consumer has released every block before ``tail``."""
        self._counters[LINE // 8] = tail


def wait_until(ready: Callable[[], bool], abort: Callable[[], bool]) -> None:
    """Spin, then sleep with back-off, until ``ready()``; raises :class:`ChannelClosed` when
    ``abort()`` turns true first."""
    spins, pause = 0, 20e-6
    while not ready():
        if abort():
            raise ChannelClosed("stopped while waiting for a free slot")
        spins += 1
        if spins < SPINS_BEFORE_SLEEP:
            os.sched_yield()
        else:
            time.sleep(pause)
            pause = min(pause * 2, 2e-3)


class Route:
    """Every channel's ring of one actor -> trainer route, and the actor's control words."""

    def __init__(self, shape: RouteShape, buffer: memoryview, keep: object = None):
        self.shape, self._keep = shape, keep  # keep: what owns the memory (mmap or tensor)
        self._control = np.frombuffer(buffer, dtype=np.int64, count=CONTROL_LINES * LINE // 8)
        self.rings: list[Ring] = []
        at = CONTROL_LINES * LINE
        for ring in shape.rings:
            self.rings.append(Ring(ring, buffer, at))
            at += ring.nbytes

    @classmethod
    def in_process(cls, shape: RouteShape) -> Route:
        """The in-process twin: the same rings in private memory."""
        memory = torch.zeros(shape.nbytes, dtype=torch.uint8)
        return cls(shape, memoryview(memory.numpy()), keep=memory)

    @classmethod
    def create(cls, shape: RouteShape, store: Store, key: str) -> tuple[Route, str]:
        """A route in a new shared-memory segment (zero-filled), its path published under
        ``key``; returns the route and the path (unlink it once the actor has attached)."""
        segment, path = create_segment(shape.nbytes, store, key)
        return cls(shape, memoryview(segment), keep=segment), path

    @classmethod
    def attach(cls, shape: RouteShape, store: Store, key: str) -> Route:
        """The route the trainer published under ``key`` (a segment of ours, checked)."""
        return cls(shape, memoryview(map_segment(shape.nbytes, store, key)), keep=None)

    # --- the actor's control words -----------------------------------------------------------
    def control(self, word: int) -> int:
        return int(self._control[word * LINE // 8])

    def set_control(self, word: int, value: int) -> None:
        self._control[word * LINE // 8] = value

    def count_produced(self, transitions: int) -> None:
        """The actor finished a chunk on this route (all its blocks published)."""
        self.set_control(PRODUCED_TRANSITIONS, self.control(PRODUCED_TRANSITIONS) + transitions)
        self.set_control(PRODUCED_CHUNKS, self.control(PRODUCED_CHUNKS) + 1)

    def beat(self) -> None:
        self.set_control(HEARTBEAT_NS, time.monotonic_ns())

    def free(self) -> int:
        """Credits in chunks: whole chunks the fullest ring can still take."""
        return min(r.free() * r.shape.slot_steps // self.shape.chunk_steps for r in self.rings)

    def depth(self) -> int:
        """Chunks (whole or begun) published on this route and not yet taken."""
        return max(-(-r.depth() * r.shape.slot_steps // self.shape.chunk_steps) for r in self.rings)
