"""Buffers crossing between torch and JAX, race-free by construction.

Actions cross torch -> JAX and each env step's outputs JAX -> torch through DLPack. DLPack
orders a consumer after its producer (the consumer's stream waits for the producer's), but it
keeps nothing alive across frameworks: each allocator hands freed memory to its next kernel on
its own stream, unaware that the other framework's stream may still read it. One process rarely
loses that race; several MPS clients, each stream waiting longer, can.

The rule, for every buffer that crosses:

1. **Actions (torch -> JAX).** They are copied into a tensor of ours (nobody else holds it, so
   nobody writes it), JAX imports that, and the tensor and JAX's view of it are held until the
   step that reads them has finished: until that step's outputs are ready. Only then may
   torch's allocator reuse the memory.
2. **Outputs (JAX -> torch), on a GPU.** torch's stream waits for them (DLPack), copies them into
   torch-owned memory, and records an event after the copy; JAX's array and torch's view of it
   are held until that event has passed. What the learner sees is ordinary torch memory, whose
   reuse torch's allocator orders by itself.
3. **Release.** Held buffers are released oldest first once their condition holds, checked
   without waiting at every hand-off. At most ``limit`` stay held: past that the oldest is
   waited for. :meth:`HandOffs.close` waits for them all.

On the CPU, torch's kernels have finished when they return and JAX's CPU client waits for a
buffer before exporting it, so outputs stay zero-copy there; actions are held as on a GPU
(JAX's CPU programs run asynchronously, reading torch's memory).

``sync`` (``gmi.debug.sync``) also waits for the device around every hand-off. ``bare``
(``gmi.debug.handoffs=bare``) passes buffers across zero-copy and unheld, as before this rule
existed, only to show in a bisection what the rule changes.
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
    """Buffers kept alive until a consumer has passed them. ``passed``: non-blocking test;
    ``wait``: blocks until it holds. ``what`` names them in tests and diagnostics."""

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
        while len(self._held) > self.limit:
            self._held[0].wait()
            self._held.popleft()

    def release_passed(self) -> None:
        """Release, oldest first, every item whose consumer has passed it; stop at the first
        one still in use (later ones were handed over later)."""
        while self._held and self._held[0].passed():
            self._held.popleft()

    def drain(self) -> None:
        """Wait for every held item, then release them all."""
        while self._held:
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
    """The hand-offs of one env (:class:`~.vec_task.VecTask`) whose learner side is
    ``device``. ``copy_outputs`` and ``record_event`` default to what ``device`` needs (a GPU:
    copy, torch CUDA events); tests pass stand-ins."""

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
        """(N, A) actions as a JAX array over memory of ours; call :meth:`stepped` with the
        outputs of the step that reads them."""
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
        """The step reading the last exported actions was dispatched and yields ``outputs``:
        hold the actions until ``outputs`` are ready (the step has then finished)."""
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
        """``x`` as a torch tensor on ``device`` that nothing of JAX's can overwrite while torch
        reads it (zero-copy where that is already so)."""
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
