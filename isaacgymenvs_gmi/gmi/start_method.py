"""How the launcher starts its GMIs: by forking itself where that is safe, else by spawning.

A forked GMI starts with everything the launcher has imported (torch, JAX, MuJoCo, rl-games:
seconds per GMI on a small machine); a spawned one imports it all again. A fork copies only the
calling thread, and a lock another thread holds stays locked in the child, so the launcher forks
only while nothing but fork-aware pools run beside its main thread: no other Python thread, no
JAX backend (its thread pools), no CUDA (a driver started before a fork is unusable in the
child), and no native thread started since the imports (an OpenGL renderer's, say). numpy's
BLAS pool, started when numpy is imported, may run: it stops itself around a fork, which is what
lets PyTorch's data loaders fork too. The launcher keeps JAX and CUDA unstarted on machines
where nothing installed could use a GPU (platform detection, the task checks); runs on a GPU,
with ``gmi.start=spawn``, or whose checks started threads (a video run tries its renderer
first), spawn.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Literal

import numpy  # noqa: F401 - its BLAS pool starts on import: counted in the threads below

StartMethod = Literal["fork", "spawn"]


def thread_count() -> int:
    """Threads of this process, native ones included (0 where the OS does not say)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


THREADS_AT_IMPORT = thread_count()  # the main thread and the pools libraries start on import


def start_method(setting: str, uses_gpu: bool) -> tuple[StartMethod, str]:
    """``("fork" | "spawn", why)`` for ``gmi.start=setting`` in this process now."""
    if setting == "spawn":
        return "spawn", "gmi.start=spawn"
    if sys.platform != "linux":
        return "spawn", f"forking is not offered on {sys.platform}"
    if uses_gpu:
        return "spawn", "the run uses a GPU"
    if threading.active_count() != 1:
        return "spawn", f"the launcher runs {threading.active_count()} Python threads"
    if _jax_started():
        return "spawn", "the launcher has started JAX's backend"
    started = thread_count() - THREADS_AT_IMPORT
    if started > 0:
        return "spawn", f"the launcher has started {started} native thread(s) since its imports"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "spawn", "the launcher has started CUDA"
    return "fork", "the launcher runs no thread a fork would break"


def _jax_started() -> bool:
    if "jax" not in sys.modules:
        return False
    from jax._src import xla_bridge

    started = getattr(xla_bridge, "backends_are_initialized", None)
    return True if started is None else bool(started())
