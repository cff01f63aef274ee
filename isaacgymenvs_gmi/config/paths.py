"""Folders a run will write into, checked before it starts: the path fits the file system, and
the folder takes a new entry or can be created (probed with a folder made and removed at once:
permissions alone do not tell, e.g. for ``/proc`` or a read-only mount)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from .errors import ConfigError

NAME_MAX = 255  # bytes in one path component (Linux, macOS)
PATH_MAX = 4096  # bytes in a whole path (Linux)


def check_writable_folder(key: str, value: Any) -> str:
    """The absolute path of folder ``value`` after checking it can be written (or created);
    ``ConfigError`` naming ``key`` otherwise. Nothing is left behind."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, value, "must be a folder path")
    path = os.path.abspath(os.path.expanduser(value))
    encoded = os.fsencode(path)
    if len(encoded) >= PATH_MAX:
        raise ConfigError(key, value, f"is longer than the file system allows ({PATH_MAX} bytes)")
    for part in encoded.split(b"/"):
        if len(part) > NAME_MAX:
            raise ConfigError(
                key, value, f"has a name longer than the file system allows ({NAME_MAX} bytes)"
            )
    existing = path
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        where = "exists and is not a folder" if existing == path else f"{existing} is a file"
        raise ConfigError(key, value, where)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-probe-", dir=existing))
    except OSError as err:
        raise ConfigError(key, value, f"cannot be written ({existing}: {err.strerror})") from None
    return path
