"""Collectives among the GMIs of one device through a shared-memory segment (host memory).

The segment holds one barrier counter per member and ``k + 1`` rows of ``row_bytes`` (one per
member, then the result). Per chunk of at most a row: write, barrier, combine, barrier, read.
Each member sums one slice of the rows into the result row, in member order, so the result is
bit-identical on every member.

Each counter is written by its owner only (no atomics), which relies on stores becoming visible
in program order (x86-64's TSO); elsewhere (:func:`shm_supported` False) traffic stays on gloo.
"""

from __future__ import annotations

import mmap
import os
import platform
import stat
import tempfile
import time
import uuid
from collections.abc import Callable

import numpy as np
import torch

from .collectives import Group
from .store import Store

CACHE_LINE = 64  # bytes between two members' counters (no false sharing)
DEFAULT_ROW_BYTES = 4 << 20  # 4 MiB per row; larger tensors go in chunks
SPINS_BEFORE_SLEEP = 50


class SharedMemoryTimeout(RuntimeError):
    """A member did not reach a shared-memory barrier in time."""


def shm_supported() -> bool:
    return platform.machine().lower() in ("x86_64", "amd64")


SEGMENT_PREFIX = "isaacgymenvs-gmi-"


def _segment_dir() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()  # noqa: S108


def checked_segment_path(path: str) -> str:
    """``path`` (from the shared store) if it is a regular file directly in the segment folder,
    with our prefix, owned by this user and private to it; else :class:`SegmentPathError`."""
    folder, name = os.path.split(path)
    problem = None
    if os.path.realpath(folder) != os.path.realpath(_segment_dir()) or not name.startswith(
        SEGMENT_PREFIX
    ):
        problem = f"not a {SEGMENT_PREFIX}* file in {_segment_dir()}"
    else:
        try:
            info = os.lstat(path)
        except OSError as err:
            problem = f"cannot be read ({err.strerror})"
        else:
            if not stat.S_ISREG(info.st_mode):
                problem = "not a regular file"
            elif info.st_uid != os.getuid():
                problem = "owned by another user"
            elif info.st_mode & 0o077:
                problem = f"readable by others (mode {info.st_mode & 0o777:o})"
    if problem:
        raise SegmentPathError(f"refusing shared-memory segment {path!r}: {problem}")
    return path


class SegmentPathError(RuntimeError):
    """The store named a shared-memory segment this runtime did not make."""


def create_segment(
    size: int, store: Store, key: str, init: Callable[[mmap.mmap], None] | None = None
) -> tuple[mmap.mmap, str]:
    """A new private (0600), zero-filled segment of ``size`` bytes, mapped, filled by ``init``,
    then published under ``key``; returns the mapping and the path (unlink it once every user
    has mapped it)."""
    path = os.path.join(_segment_dir(), f"{SEGMENT_PREFIX}{uuid.uuid4().hex}")
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
    try:
        os.ftruncate(fd, size)
        segment = mmap.mmap(fd, size)
        if init is not None:
            init(segment)
    except BaseException:
        os.unlink(path)
        raise
    finally:
        os.close(fd)
    store.set(key, path)
    return segment, path


def map_segment(size: int, store: Store, key: str) -> mmap.mmap:
    """Map the segment of ``size`` bytes published under ``key`` (:func:`checked_segment_path`)."""
    path = checked_segment_path(store.get(key).decode())
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW)
    try:
        actual = os.fstat(fd).st_size
        if actual != size:
            raise SegmentPathError(f"segment {path} has {actual} bytes, expected {size}")
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)


class SharedMemoryCollectives:
    """Collectives over ``members`` (GMI ids, one device), as GMI ``rank``; the first member
    passes the segment's name to the others under ``key`` in the shared ``store``."""

    def __init__(
        self,
        rank: int,
        members: Group,
        store: Store,
        key: str,
        row_bytes: int = DEFAULT_ROW_BYTES,
        timeout_s: float = 1800.0,
    ):
        self.rank, self.members = rank, tuple(sorted(members))
        self.me = self.members.index(rank)
        self.k, self.timeout_s = len(self.members), timeout_s
        self.row_bytes = int(row_bytes) // 8 * 8
        header = self.k * CACHE_LINE
        size = header + self._host_row_bytes()
        self._epoch = 0
        if self.me == 0:
            self._map, path = create_segment(size, store, key)
        else:
            self._map = map_segment(size, store, key)
        counters = np.frombuffer(self._map, dtype=np.int64, count=header // 8)
        self._counters = counters[:: CACHE_LINE // 8]  # (k,) one per member, own cache line
        try:
            self._bytes = self._make_rows(self._map, header, store, key)
            self.barrier()  # everyone has mapped the segment
        finally:
            if self.me == 0:
                os.unlink(path)  # the mapping outlives the name: nothing is left behind

    # --- where the rows live (host memory here; subclasses may move them) --------------------
    device = torch.device("cpu")

    def _host_row_bytes(self) -> int:
        """Bytes of the segment after the counters that hold rows."""
        return (self.k + 1) * self.row_bytes

    def _make_rows(self, segment: mmap.mmap, header: int, store: Store, key: str) -> torch.Tensor:
        """((k + 1) * row_bytes,) uint8: every member's row, then the result row."""
        return torch.from_numpy(np.frombuffer(segment, dtype=np.uint8, offset=header))

    def _fence(self) -> None:
        """Make this member's writes to the rows visible to the others (host stores are)."""

    def close(self) -> None:
        self._bytes = self._counters = None
        self._map.close()

    # --- synchronisation ---------------------------------------------------------------------
    def barrier(self) -> None:
        self._epoch += 1
        self._counters[self.me] = self._epoch
        counters, epoch = self._counters, self._epoch
        spins, deadline = 0, None
        while (counters < epoch).any():
            spins += 1
            if spins < SPINS_BEFORE_SLEEP:
                os.sched_yield()
                continue
            now = time.monotonic()
            deadline = deadline or now + self.timeout_s
            if now > deadline:
                behind = [self.members[i] for i in np.flatnonzero(counters < epoch)]
                raise SharedMemoryTimeout(
                    f"GMIs {behind} did not reach shared-memory barrier #{epoch} within "
                    f"{self.timeout_s:.0f} s"
                )
            time.sleep(50e-6)

    # --- collectives (Collectives protocol) --------------------------------------------------
    def all_reduce(self, t: torch.Tensor, group: Group) -> None:
        self._sum(t, keep=True)

    def reduce(self, t: torch.Tensor, dst: int, group: Group) -> None:
        self._sum(t, keep=self.rank == dst)

    def broadcast(self, t: torch.Tensor, src: int, group: Group) -> None:
        if self.k == 1:
            return
        rows = self._rows(t.dtype)
        src_row = self.members.index(src)
        for chunk in self._chunks(t, rows.shape[1]):
            n = chunk.numel()
            if self.rank == src:
                rows[src_row, :n].copy_(chunk)
                self._fence()
            self.barrier()
            if self.rank != src:
                chunk.copy_(rows[src_row, :n])
                self._fence()  # read before the source may overwrite its row
            self.barrier()

    def _sum(self, t: torch.Tensor, keep: bool) -> None:
        if self.k == 1:
            return
        rows = self._rows(t.dtype)
        mine, result = rows[self.me], rows[self.k]
        for chunk in self._chunks(t, rows.shape[1]):
            n = chunk.numel()
            mine[:n].copy_(chunk)
            self._fence()
            self.barrier()
            lo, hi = self.me * n // self.k, (self.me + 1) * n // self.k
            if hi > lo:
                part = result[lo:hi]
                part.copy_(rows[0, lo:hi])
                for r in range(1, self.k):
                    part.add_(rows[r, lo:hi])
                self._fence()
            self.barrier()
            if keep:
                chunk.copy_(result[:n])

    def _rows(self, dtype: torch.dtype) -> torch.Tensor:
        """(k + 1, row_bytes // itemsize) view of the data area as ``dtype``."""
        return self._bytes.view(dtype).view(self.k + 1, -1)

    def _chunks(self, t: torch.Tensor, per_chunk: int):
        if not t.is_contiguous() or t.device != self.device:
            raise TypeError(
                f"{type(self).__name__} takes contiguous tensors on {self.device} ({t.device})"
            )
        flat = t.view(-1)
        for start in range(0, flat.numel(), per_chunk):
            yield flat[start : start + per_chunk]
