"""Buffers crossing between torch and JAX, race-free by construction.

Actions cross torch -> JAX and step outputs JAX -> torch through DLPack, which orders the
consumer's stream after the producer's but keeps nothing alive across frameworks: either
allocator may hand freed memory to its next kernel while the other framework still reads it
(rare in one process; several MPS clients can lose that race). The rule for every crossing:

1. **Actions (torch -> JAX)** are copied into a tensor of ours, which JAX imports; both are held
   until the step that reads them has finished (its outputs are ready).
2. **Outputs (JAX -> torch), on a GPU**: torch copies them into torch-owned memory and records
   an event after the copy; JAX's array and torch's view are held until that event has passed.
3. **Release**: held buffers go oldest first once their condition holds, checked without
   waiting at every hand-off; past ``limit`` held, the oldest is waited for.

On the CPU outputs stay zero-copy (both frameworks have finished with them); actions are held
as on a GPU (JAX's CPU programs run asynchronously). ``sync`` (``gmi.debug.sync``) also waits
for the device at every hand-off; ``bare`` (``gmi.debug.handoffs=bare``) skips the rule.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import jax
import numpy as np
import torch

HOLD_LIMIT = 8  # held hand-offs before the oldest is waited for (2 in steady state)


class Event(Protocol):
    """What a consumer leaves behind once it has enqueued its reads (``torch.cuda.Event``)."""

    def query(self) -> bool: ...  # passed, without waiting

    def synchronize(self) -> None: ...  # wait until passed


@dataclass
class Held:
    """Buffers (``refs``) kept alive until ``passed()`` (non-blocking); ``wait()`` blocks until
    then. ``what`` names them in tests and diagnostics."""

    what: str
    refs: tuple[Any, ...]
    passed: Callable[[], bool]
    wait: Callable[[], None]


class HoldLedger:
    """Held buffers, oldest first; released only once their own condition holds."""

    def __init__(self, limit: int = HOLD_LIMIT):
        self.limit = limit
        self._held: deque[Held] = deque()

    def hold(self, item: Held) -> None:
        self._held.append(item)
        self.release_passed()
        self.drain(self.limit)

    def release_passed(self) -> None:
        """Release, oldest first, every passed item; stop at the first one still in use."""
        while self._held and self._held[0].passed():
            self._held.popleft()

    def drain(self, keep: int = 0) -> None:
        """Wait for and release the oldest items until at most ``keep`` are held."""
        while len(self._held) > keep:
            self._held[0].wait()
            self._held.popleft()

    @property
    def held(self) -> list[str]:
        return [h.what for h in self._held]


def sync_devices() -> None:
    """Wait until every kernel torch and JAX have enqueued in this process has run."""
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()
    with contextlib.suppress(RuntimeError):  # an array deleted (donated) meanwhile
        jax.block_until_ready(jax.live_arrays())


def _cuda_event() -> Event:
    event = torch.cuda.Event()
    event.record()
    return event


class HandOffs:
    """The hand-offs of one :class:`~.vec_task.VecTask` whose learner is on ``device``;
    ``copy_outputs`` and ``record_event`` default to what ``device`` needs (tests stub them)."""

    def __init__(
        self,
        device: torch.device,
        *,
        sync: bool = False,
        bare: bool = False,
        limit: int = HOLD_LIMIT,
        copy_outputs: bool | None = None,
        record_event: Callable[[], Event] | None = None,
    ):
        self.device = device
        self.sync, self.bare = sync, bare
        gpu = device.type == "cuda"
        self.copy_outputs = gpu if copy_outputs is None else copy_outputs
        self.record_event = record_event or (_cuda_event if gpu else None)
        self.ledger = HoldLedger(limit)
        self._exported: tuple[torch.Tensor, jax.Array] | None = None  # awaiting its step
        self._step = 0

    def actions_to_jax(self, actions: torch.Tensor) -> jax.Array:
        """(N, A) float32 actions as a JAX array over memory of ours; call :meth:`stepped` with
        the outputs of the step that reads them."""
        actions = actions.detach()
        if self.bare:
            return jax.dlpack.from_dlpack(actions.to(torch.float32).contiguous())
        owned = torch.empty(actions.shape, dtype=torch.float32, device=actions.device)
        owned.copy_(actions)
        if self.sync:
            sync_devices()
        view = jax.dlpack.from_dlpack(owned)
        self._exported = (owned, view)
        return view

    def stepped(self, outputs: jax.Array) -> None:
        """Hold the last exported actions until ``outputs`` of the step reading them are ready."""
        self._step += 1
        if self.sync:
            jax.block_until_ready(outputs)
        if self._exported is None:
            return
        refs, self._exported = self._exported, None
        self.ledger.hold(
            Held(f"actions {self._step}", refs, outputs.is_ready, outputs.block_until_ready)
        )

    def to_torch(self, x: jax.Array | np.ndarray) -> torch.Tensor:
        """``x`` as a torch tensor on ``device`` that JAX cannot overwrite while torch reads it
        (zero-copy where that is already so)."""
        view = torch.from_dlpack(x)
        if view.device != self.device:
            # host -> GPU from pageable memory is staged before the call returns; GPU -> host
            # must block (a non-blocking copy into host memory may be read before it lands)
            return view.to(self.device, non_blocking=view.device.type == "cpu")
        if self.bare or not self.copy_outputs or not isinstance(x, jax.Array):
            return view
        owned = view.clone()
        event = self.record_event()
        self.ledger.hold(Held(f"outputs {self._step}", (x, view), event.query, event.synchronize))
        if self.sync:
            sync_devices()
        return owned

    def close(self) -> None:
        if self._exported is not None:
            jax.block_until_ready(self._exported[1])
            self._exported = None
        self.ledger.drain()
