"""A store that is a folder (the run's private 0700 one): one file per key, no socket.

A key's file holds one record: the value's length and CRC-32, then the value, padded to the
file's capacity. Its first record is a temporary file renamed into place; its writer then
rewrites it in place with one ``pwrite`` (a reader that meets a torn record sees its CRC-32 fail
and reads again). A value too long for its file gets a larger file, renamed over the old one.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import time
import zlib
from datetime import timedelta

_FIRST_POLL_S, _LAST_POLL_S = 0.001, 0.02  # a missing key is looked for again, ever less often
_HEADER = struct.Struct("<II")  # value length, CRC-32 of the value
_MIN_CAPACITY = 128  # bytes per file at least: a progress record fits several times over
_TORN_RETRY_S = 0.0002


class FolderStoreTimeout(RuntimeError):
    """A key did not appear in the store within its timeout (RuntimeError, as torch's)."""


class FolderStore:
    """:class:`~.store.Store` over the folder ``path`` (created 0700 if missing), shared by
    every process that names it."""

    def __init__(self, path: str, timeout: timedelta = timedelta(seconds=300)):
        os.makedirs(path, mode=0o700, exist_ok=True)
        self.path, self._timeout_s = path, timeout.total_seconds()
        self._written: dict[str, tuple[int, int]] = {}  # key -> (open descriptor, capacity)

    def _file(self, key: str) -> str:
        return os.path.join(self.path, hashlib.sha256(key.encode()).hexdigest())

    def set(self, key: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else bytes(value)
        record = _HEADER.pack(len(data), zlib.crc32(data)) + data
        mine = self._written.get(key)
        if mine is not None and len(record) <= mine[1]:
            os.pwrite(mine[0], record.ljust(mine[1], b"\0"), 0)  # in place, one write
            return
        capacity = max(_MIN_CAPACITY, 2 * len(record))
        fd, scratch = tempfile.mkstemp(dir=self.path, prefix=".set-")
        try:
            os.write(fd, record.ljust(capacity, b"\0"))
            os.replace(scratch, self._file(key))
        except BaseException:
            os.close(fd)
            if os.path.exists(scratch):
                os.unlink(scratch)
            raise
        if mine is not None:
            os.close(mine[0])
        self._written[key] = (fd, capacity)

    def get(self, key: str) -> bytes:
        """The value under ``key``, waiting up to the timeout (else :class:`FolderStoreTimeout`)."""
        path, poll = self._file(key), _FIRST_POLL_S
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                with open(path, "rb") as found:
                    raw = found.read()
            except FileNotFoundError:
                raw = None
            value = None if raw is None else _value_of(raw)
            if value is not None:
                return value
            if time.monotonic() >= deadline:
                raise FolderStoreTimeout(
                    f"store key {key!r} did not appear within {self._timeout_s:g} s"
                )
            if raw is None:
                time.sleep(poll)
                poll = min(2 * poll, _LAST_POLL_S)
            else:  # a record being rewritten: read again in a moment
                time.sleep(_TORN_RETRY_S)

    def set_timeout(self, timeout: timedelta) -> None:
        self._timeout_s = timeout.total_seconds()

    def close(self) -> None:
        """Let go of the files this process wrote (they stay, for the others to read)."""
        for fd, _ in self._written.values():
            os.close(fd)
        self._written.clear()


def _value_of(raw: bytes) -> bytes | None:
    """The value in a key file's bytes; None while a rewrite is half done."""
    if len(raw) < _HEADER.size:
        return None
    length, crc = _HEADER.unpack_from(raw)
    data = raw[_HEADER.size : _HEADER.size + length]
    return data if len(data) == length and zlib.crc32(data) == crc else None
