"""Policy weights from the first trainer to the actors of a node: versioned, shared once,
refreshed in place, never read half-written.

One buffer holds a sequence word, the policy version, a stop word (the run is over) and the
flat float32 weights (parameters and buffers: normaliser statistics travel with them). The
trainer writes under a sequence lock (odd while writing); a reader copies, then reads again if
the sequence word moved, so the writer never waits for readers. The buffer is a shared-memory
segment (:meth:`WeightsBoard.create` / :meth:`WeightsBoard.attach`) or private memory (the twin).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence

import numpy as np
import torch

from isaacgymenvs_gmi.comm.shared_memory import create_segment, map_segment
from isaacgymenvs_gmi.comm.store import Store

from .route import LINE

SEQ, VERSION, STOP, NUMEL = 0, 1, 2, 3
HEADER = 4 * LINE


def module_tensors(modules: Sequence[torch.nn.Module]) -> list[torch.Tensor]:
    """Every parameter and buffer of ``modules`` with elements, in a fixed order."""
    return [t for m in modules for t in (*m.parameters(), *m.buffers()) if t.numel()]


def flatten(modules: Sequence[torch.nn.Module], out: torch.Tensor | None = None) -> torch.Tensor:
    """(numel,) float32 host copy of every parameter and buffer."""
    tensors = module_tensors(modules)
    if out is None:
        out = torch.empty(sum(t.numel() for t in tensors), dtype=torch.float32)
    at = 0
    for t in tensors:
        n = t.numel()
        out[at : at + n].copy_(t.detach().reshape(-1))
        at += n
    return out


def unflatten(flat: torch.Tensor, modules: Sequence[torch.nn.Module]) -> None:
    """Load ``flat`` (as made by :func:`flatten`) into ``modules`` in place."""
    at = 0
    with torch.no_grad():
        for t in module_tensors(modules):
            n = t.numel()
            t.copy_(flat[at : at + n].view_as(t).to(t.dtype))
            at += n


class WeightsBoard:
    """The versioned weights of one policy (``numel`` float32 values)."""

    def __init__(self, numel: int, buffer: memoryview, keep: object = None):
        self.numel, self._keep = numel, keep
        self._words = np.frombuffer(buffer, dtype=np.int64, count=HEADER // 8)
        self._data = torch.frombuffer(buffer, dtype=torch.float32, count=numel, offset=HEADER)

    @staticmethod
    def nbytes(numel: int) -> int:
        return HEADER + 4 * numel

    @classmethod
    def in_process(cls, numel: int) -> WeightsBoard:
        memory = torch.zeros(cls.nbytes(numel), dtype=torch.uint8)
        board = cls(numel, memoryview(memory.numpy()), keep=memory)
        board._set(NUMEL, numel)
        return board

    @classmethod
    def create(cls, numel: int, store: Store, key: str) -> tuple[WeightsBoard, str]:
        def size_word(segment) -> None:  # written before the path is published
            np.frombuffer(segment, dtype=np.int64, count=HEADER // 8)[NUMEL * LINE // 8] = numel

        segment, path = create_segment(cls.nbytes(numel), store, key, init=size_word)
        return cls(numel, memoryview(segment), keep=segment), path

    @classmethod
    def attach(cls, numel: int, store: Store, key: str) -> WeightsBoard:
        segment = map_segment(cls.nbytes(numel), store, key)
        board = cls(numel, memoryview(segment), keep=segment)
        if board._get(NUMEL) != numel:
            raise RuntimeError(
                f"the trainer's policy has {board._get(NUMEL)} values, this actor's {numel}"
            )
        return board

    def _get(self, word: int) -> int:
        return int(self._words[word * LINE // 8])

    def _set(self, word: int, value: int) -> None:
        self._words[word * LINE // 8] = value

    @property
    def published(self) -> bool:
        """Whether a policy was ever published here (a fresh board holds zeros)."""
        return self._get(SEQ) > 0

    @property
    def version(self) -> int:
        """The version published last (0 before the first)."""
        return self._get(VERSION)

    # --- trainer -----------------------------------------------------------------------------
    def publish(self, flat: torch.Tensor, version: int) -> None:
        """Make ``flat`` the policy of ``version`` (readers never see it half-written)."""
        seq = self._get(SEQ)
        self._set(SEQ, seq + 1)  # odd: writing
        self._data.copy_(flat)
        self._set(VERSION, version)
        self._set(SEQ, seq + 2)

    def request_stop(self) -> None:
        self._set(STOP, 1)

    @property
    def stopping(self) -> bool:
        return self._get(STOP) != 0

    # --- actors ------------------------------------------------------------------------------
    def read_newer(self, have: int, out: torch.Tensor, timeout_s: float = 10.0) -> int | None:
        """Copy the policy into ``out`` if its version is newer than ``have``; returns the
        version copied, or None when there is nothing newer."""
        deadline = time.monotonic() + timeout_s
        while True:
            before = self._get(SEQ)
            version = self._get(VERSION)
            if before % 2 == 0:
                if version <= have:
                    return None
                out.copy_(self._data)
                if self._get(SEQ) == before:
                    return version
            if time.monotonic() > deadline:
                raise TimeoutError("the policy stayed half-written (a trainer died while writing?)")
            os.sched_yield()
