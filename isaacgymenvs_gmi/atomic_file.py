"""Files that are either whole or absent: written under a temporary name in the same folder,
flushed to disk, then moved onto their name (a reader sees the old file or the new one, never
half of it; a failed write leaves no temporary behind). Imports nothing of ours."""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_atomically(path: str | os.PathLike, data: bytes) -> None:
    """``data`` into ``path``, whole or not at all (the folder must exist)."""
    folder, name = os.path.split(os.fspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
