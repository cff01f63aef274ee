"""The test session's own temp dir, and the check that the session's runs leave nothing behind.

Everything the session and the processes it starts write to "the temp dir" goes to one fresh
folder, ``gmi-test-session-<pid>-*`` inside the machine's temp dir (``TMPDIR`` points there),
removed when the session ends. That holds for caches no variable moves: torch writes its
precompiled headers to ``<temp dir>/torchinductor_<user>`` whatever ``TORCHINDUCTOR_CACHE_DIR``
says, so a compiling test on a machine that never ran one would otherwise leave that folder in
``/tmp``. The next session removes the folder of one that was killed. pytest's own ``tmp_path``
folders stay in the machine's temp dir (``PYTEST_DEBUG_TEMPROOT``), so a failed test's folder
is kept as before.

A leftover is a file or folder of ours (:data:`LEFTOVER_PATTERNS`): new in the machine's temp
dir or ``/dev/shm``, or anywhere in the session's folder except the caches kept there on
purpose.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field

PREFIX = "gmi-test-session-"
LEFTOVER_PATTERNS = (
    "torchelastic_*",
    "pytorch-errorfile-*",
    "gmi[0-9]*-*",
    "gmi-mps-*",  # an MPS daemon's folders (the daemon itself is gone with them)
    "isaacgymenvs-gmi-*",
    "torchinductor_*",
)
SHARED_MEMORY = "/dev/shm"  # noqa: S108
TORCH_HEADERS = "torchinductor_*"  # torch's own cache in the test process's temp dir
CACHES = ("torch-cache", "cache-home")  # TORCHINDUCTOR_CACHE_DIR and XDG_CACHE_HOME (XLA)


def ours(folder: str, skip: tuple[str, ...] = ()) -> set[str]:
    """Paths in ``folder`` that match :data:`LEFTOVER_PATTERNS` and none of ``skip``."""
    if not os.path.isdir(folder):
        return set()
    return {
        os.path.join(folder, name)
        for name in os.listdir(folder)
        if any(fnmatch.fnmatch(name, p) for p in LEFTOVER_PATTERNS)
        and not any(fnmatch.fnmatch(name, s) for s in skip)
    }


def remove_abandoned(outer: str) -> None:
    """Remove the folders of earlier sessions whose process is gone (killed before its end)."""
    for name in os.listdir(outer):
        pid = name.removeprefix(PREFIX).split("-")[0]
        if name.startswith(PREFIX) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(outer, name), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@dataclass
class SessionTemp:
    """The machine's temp dir (``outer``), the session's folder in it (``root``) and what of
    ours was in ``outer`` and ``/dev/shm`` before the session (another suite's, a user's)."""

    outer: str
    root: str
    before: set[str] = field(default_factory=set)

    @classmethod
    def enter(cls) -> SessionTemp:
        """Make the session's folder this process's temp dir, and its caches'; call before any
        test compiles (torch fixes its header folder when it first compiles)."""
        if "torch._inductor.codecache" in sys.modules:
            raise RuntimeError("torch compiled before the session's temp dir was set")
        outer = tempfile.gettempdir()
        remove_abandoned(outer)
        before = ours(outer) | ours(SHARED_MEMORY)
        root = tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=outer)
        os.chmod(root, 0o711)  # others may reach a folder in it (a test plays another user)
        os.environ["TMPDIR"], tempfile.tempdir = root, None
        os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", outer)
        os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(root, CACHES[0]))
        # runs with gmi.compile_cache=auto share one XLA cache for the session, not the user's
        # (a test of the cache itself names its own folder)
        os.environ["XDG_CACHE_HOME"] = os.path.join(root, CACHES[1])
        # wandb's system monitor writes its logs to ~/.cache/wandb, whatever XDG_CACHE_HOME says
        os.environ["WANDB_CACHE_DIR"] = os.path.join(root, CACHES[1], "wandb")
        return cls(outer, root, before)

    def leftovers(self, shared_memory: bool = True) -> list[str]:
        """What the session's runs left behind (sorted paths); ``shared_memory=False`` leaves
        ``/dev/shm`` to the session that started this one (a parallel worker's siblings may
        still hold segments there)."""
        new = (ours(self.outer) | (ours(SHARED_MEMORY) if shared_memory else set())) - self.before
        return sorted(new | ours(self.root, skip=(TORCH_HEADERS,)))

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
