"""The in-process twin of a channel transport: bounded, blocking, thread-safe.

Producers wait when the buffer is full (back-pressure: memory never grows without bound); the
consumer waits for the next chunk. Every cross-process transport keeps these semantics, and the
whole async system can run on this one in a single process (tests, a debugger).
"""

from __future__ import annotations

import queue
import threading

from .chunks import Chunk


class ChannelClosed(RuntimeError):
    """The channel was closed and holds nothing more."""


class InProcessChannel:
    """A bounded FIFO of :class:`~.chunks.Chunk` items holding at most ``capacity``."""

    def __init__(self, capacity: int):
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1 (got {capacity})")
        self._slots = threading.BoundedSemaphore(capacity)  # free places for chunks
        self._queue: queue.Queue[Chunk | None] = queue.Queue()  # the end mark needs no place
        self._closed = False

    def send(self, chunk: Chunk, timeout: float | None = None) -> None:
        """Put ``chunk``, waiting while the buffer is full (raises ``queue.Full`` after
        ``timeout`` seconds)."""
        if self._closed:
            raise ChannelClosed("send on a closed channel")
        if not self._slots.acquire(timeout=timeout):
            raise queue.Full
        self._queue.put(chunk)

    def recv(self, timeout: float | None = None) -> Chunk:
        """The oldest chunk, waiting for one (``queue.Empty`` after ``timeout`` seconds);
        raises :class:`ChannelClosed` once closed and drained."""
        item = self._queue.get(timeout=timeout)
        if item is None:
            self._queue.put(None)  # let other consumers see the end too
            raise ChannelClosed("channel closed")
        self._slots.release()
        return item

    def close(self) -> None:
        """No more sends; consumers get what is buffered, then :class:`ChannelClosed`. Never
        waits, even on a full channel."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)

    def depth(self) -> int:
        """Chunks buffered now (approximate while others run; the end mark not counted)."""
        return self._queue.qsize() - int(self._closed)
