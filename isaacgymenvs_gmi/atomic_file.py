"""Files that are either whole or absent: written under a temporary name in the same folder,
flushed to disk, then moved onto their name (a reader sees the old file or the new one, never
half of it; a failed write leaves no temporary behind). Imports nothing of ours."""

from __future__ import annotations

import contextlib
import os
import tempfile


def write_atomically(path: str | os.PathLike, data: bytes, durable: bool = True) -> None:
    """``data`` into ``path``, whole or not at all (the folder must exist). ``durable=False``
    skips the flush to disk, for files rewritten often whose loss in a crash of the machine
    does not matter (a reader still sees a whole file)."""
    folder, name = os.path.split(os.fspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder or ".")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
