"""A store that is a folder: one file per key, only as reachable as the folder is.

The runtime's keys on one node (progress records, transport set-up) live here, in the run's
private 0700 folder: another user cannot list, read or write them, and no socket is open for a
stranger to find. A value is written to a temporary file and renamed over the key's file, so a
reader sees the old value or the new one, never part of one; a key's file is rewritten in place,
so the folder's size stays bounded however long the run.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import time
from datetime import timedelta

_FIRST_POLL_S, _LAST_POLL_S = 0.001, 0.02  # a missing key is looked for again, ever less often


class FolderStoreTimeout(RuntimeError):
    """A key did not appear in the store within its timeout (a RuntimeError, as torch's store
    errors are)."""


class FolderStore:
    """:class:`~.store.Store` over the folder ``path`` (created 0700 if missing), shared by
    every process that names it."""

    def __init__(self, path: str, timeout: timedelta = timedelta(seconds=300)):
        os.makedirs(path, mode=0o700, exist_ok=True)
        self.path, self._timeout_s = path, timeout.total_seconds()

    def _file(self, key: str) -> str:
        return os.path.join(self.path, hashlib.sha256(key.encode()).hexdigest())

    def set(self, key: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else bytes(value)
        fd, scratch = tempfile.mkstemp(dir=self.path, prefix=".set-")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(scratch, self._file(key))
        except BaseException:
            if os.path.exists(scratch):
                os.unlink(scratch)
            raise

    def get(self, key: str) -> bytes:
        """The value under ``key``, waiting up to the timeout for it to appear.

        Raises:
            FolderStoreTimeout: it did not appear in time.
        """
        path, poll = self._file(key), _FIRST_POLL_S
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                with open(path, "rb") as found:
                    return found.read()
            except FileNotFoundError:
                if time.monotonic() >= deadline:
                    raise FolderStoreTimeout(
                        f"store key {key!r} did not appear within {self._timeout_s:g} s"
                    ) from None
                time.sleep(poll)
                poll = min(2 * poll, _LAST_POLL_S)

    def set_timeout(self, timeout: timedelta) -> None:
        self._timeout_s = timeout.total_seconds()
