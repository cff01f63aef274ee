"""Each run's private temp folder (GMIs' scratch folders, ``TMPDIR``, torch's caches), removed
when the run ends; its name carries the launcher's pid, so a later run removes it if a SIGKILL
left it behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from .liveness import process_state

PREFIX = "isaacgymenvs-gmi-run-"
_NAME = re.compile(re.escape(PREFIX) + r"(\d+)-")


@contextmanager
def private_temp_dir() -> Iterator[str]:
    """A fresh folder that is this process's temp dir (``TMPDIR``) until exit, then removed
    with whatever was written there. Variables pointed into it meanwhile (torch records its
    cache folder in ``TORCHINDUCTOR_CACHE_DIR``) get their old values back."""
    remove_abandoned()
    folder = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-")
    before = dict(os.environ)
    os.environ["TMPDIR"], tempfile.tempdir = folder, None
    try:
        yield folder
    finally:
        for key, value in list(os.environ.items()):
            if value.startswith(folder):
                if key in before:
                    os.environ[key] = before[key]
                else:
                    del os.environ[key]
        tempfile.tempdir = None
        shutil.rmtree(folder, ignore_errors=True)


def remove_abandoned(folder: str | None = None) -> list[str]:
    """Remove run folders in the temp dir (or ``folder``) that belong to this user and whose
    launcher is no longer running; returns what was removed."""
    folder = folder or tempfile.gettempdir()
    removed = []
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            found = _NAME.match(entry.name)
            if not found or not entry.is_dir(follow_symlinks=False):
                continue
            if entry.stat(follow_symlinks=False).st_uid != os.getuid():
                continue
            if process_state(int(found.group(1))) != "gone":  # a zombie still holds its pid
                continue
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.path)
    return removed
