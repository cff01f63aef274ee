"""One actor -> trainer route: a ring of slots per channel plus the actor's counters, in one
buffer that both ends map: a shared-memory segment (:meth:`Route.create` by the trainer,
:meth:`Route.attach` by the actor) or private memory (:meth:`Route.in_process`, the twin).

Each ring is single-producer (writes ``head`` and its reserved slot), single-consumer (writes
``tail``). A slot is published by writing its data, then its header, then ``head``; x86-64 (TSO)
keeps stores in that order, so a consumer that sees ``head`` sees the slot whole. Free slots are
the producer's credits: with none left it waits (back-pressure).

A route may keep its slots' data *apart* (:meth:`RouteShape.data_apart`): for GMIs sharing a
GPU, device memory the trainer allocates and the actor opens by CUDA IPC, so experience made on
the GPU never crosses PCIe (on the CPU, a second segment). Headers and counters stay in host
memory; each end waits for its own stream before it publishes or releases a slot, so the other
end never sees a half-written slot or overwrites one still being read.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass, replace

import numpy as np
import torch

from isaacgymenvs_gmi.comm.cuda_ipc import encode_rows_handle, open_rows_handle
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
    """A channel's ring: ``capacity`` slots of ``slot_steps`` steps x ``envs`` rows; with
    ``apart`` the slots' data lives in the route's data buffer, only headers in the host one."""

    channel: ChannelSpec
    capacity: int
    slot_steps: int
    envs: int
    apart: bool = False

    @property
    def data_bytes(self) -> int:
        """Bytes of one slot's data."""
        return self.slot_steps * self.envs * self.channel.row_bytes

    @property
    def slot_bytes(self) -> int:
        """Bytes of one slot in the host buffer (its header, and its data unless apart)."""
        return _round_up(HEADER_INTS * 8 + (0 if self.apart else self.data_bytes), LINE)

    @property
    def nbytes(self) -> int:
        return 2 * LINE + self.capacity * self.slot_bytes

    @property
    def apart_nbytes(self) -> int:
        return self.capacity * self.data_bytes if self.apart else 0


@dataclass(frozen=True)
class RouteShape:
    """Every channel's ring of a route; a chunk is ``chunk_steps`` steps of every channel."""

    rings: tuple[RingShape, ...]
    chunk_steps: int

    @property
    def nbytes(self) -> int:
        """Bytes of the host buffer."""
        return CONTROL_LINES * LINE + sum(s.nbytes for s in self.rings)

    @property
    def apart_nbytes(self) -> int:
        """Bytes of the data buffer (0: the data is in the host buffer)."""
        return sum(s.apart_nbytes for s in self.rings)

    def data_apart(self) -> RouteShape:
        """This shape with every ring's data in a buffer apart from the host one."""
        return RouteShape(tuple(replace(r, apart=True) for r in self.rings), self.chunk_steps)


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
    """One channel's ring inside a route buffer (see the module docstring); ``data``: the
    ring's part of the route's data buffer, flat uint8, when its data is apart."""

    def __init__(
        self, shape: RingShape, buffer: memoryview, base: int, data: torch.Tensor | None = None
    ):
        self.shape = shape
        rows = (shape.capacity, shape.slot_steps, shape.envs, shape.channel.row_bytes)
        self._data = None if data is None else data.view(rows)
        self.device = torch.device("cpu") if data is None else data.device
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
        if self._data is not None:
            return self._data[slot]
        s = self.shape
        data = self._slots[slot, HEADER_INTS * 8 : HEADER_INTS * 8 + s.data_bytes]
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
        self._fence()  # the data is written before the header says so
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
        self._fence()  # the data is read out before the producer may overwrite it
        self._counters[LINE // 8] = self.tail + 1

    def _fence(self) -> None:
        """Wait for this process's device work on the slots (a no-op for host memory)."""
        if self.device.type == "cuda":
            torch.cuda.current_stream(self.device).synchronize()

    # --- mirroring: a copy of the ring at the other end of a network link (:mod:`.p2p`) ----
    def slot(self, block: int) -> torch.Tensor:
        """(slot_bytes,) uint8, contiguous: the whole slot (header and data) of the ``block``-th
        block since the start."""
        assert not self.shape.apart, "a route with its data apart is not mirrored"
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
    """Every channel's ring of one actor -> trainer route, and the actor's control words;
    ``data``: the data buffer ((shape.apart_nbytes,) uint8, host or GPU) of a shape apart."""

    def __init__(
        self,
        shape: RouteShape,
        buffer: memoryview,
        keep: object = None,
        data: torch.Tensor | None = None,
    ):
        if (data is None) != (shape.apart_nbytes == 0):
            raise ValueError("a data buffer goes with a shape whose data is apart, and only then")
        self.shape, self._keep = shape, keep  # keep: what owns the host memory
        self.device = torch.device("cpu") if data is None else data.device
        self._control = np.frombuffer(buffer, dtype=np.int64, count=CONTROL_LINES * LINE // 8)
        self.rings: list[Ring] = []
        at, data_at = CONTROL_LINES * LINE, 0
        for ring in shape.rings:
            part = None if data is None else data[data_at : data_at + ring.apart_nbytes]
            self.rings.append(Ring(ring, buffer, at, part))
            at += ring.nbytes
            data_at += ring.apart_nbytes

    @classmethod
    def in_process(cls, shape: RouteShape) -> Route:
        """The in-process twin: the same rings in private memory."""
        memory = torch.zeros(shape.nbytes, dtype=torch.uint8)
        return cls(shape, memoryview(memory.numpy()), keep=memory)

    @classmethod
    def create(
        cls, shape: RouteShape, store: Store, key: str, device: torch.device | str = "cpu"
    ) -> tuple[Route, list[str]]:
        """A route in a new zero-filled segment published under ``key``, with its data apart (if
        the shape says so) on ``device``, published under ``key/data``. Returns the route and
        the segment paths (unlink them once the actor has attached)."""
        device = torch.device(device)
        data, paths = None, []
        if shape.apart_nbytes and device.type == "cuda":
            data = torch.zeros(shape.apart_nbytes, dtype=torch.uint8, device=device)
            torch.cuda.synchronize(device)
            store.set(f"{key}/data", encode_rows_handle(data))
        elif shape.apart_nbytes:
            segment, path = create_segment(shape.apart_nbytes, store, f"{key}/data")
            paths.append(path)
            data = torch.frombuffer(segment, dtype=torch.uint8, count=shape.apart_nbytes)
        try:
            segment, path = create_segment(shape.nbytes, store, key)
        except BaseException:
            for p in paths:
                os.unlink(p)
            raise
        return cls(shape, memoryview(segment), keep=segment, data=data), [*paths, path]

    @classmethod
    def attach(
        cls, shape: RouteShape, store: Store, key: str, device: torch.device | str = "cpu"
    ) -> Route:
        """The route the trainer published under ``key`` (a segment of ours, checked), with its
        data buffer apart opened on ``device`` (the same GPU as the trainer's, or the CPU)."""
        device = torch.device(device)
        segment = map_segment(shape.nbytes, store, key)
        data = None
        if shape.apart_nbytes and device.type == "cuda":
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
            data = open_rows_handle(store.get(f"{key}/data"), device)
        elif shape.apart_nbytes:
            apart = map_segment(shape.apart_nbytes, store, f"{key}/data")
            data = torch.frombuffer(apart, dtype=torch.uint8, count=shape.apart_nbytes)
        return cls(shape, memoryview(segment), keep=segment, data=data)

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
