"""How the launcher starts its GMIs: by forking itself where that is safe, else by spawning.

A forked GMI skips re-importing torch, JAX, MuJoCo and rl-games (seconds each). A fork copies
only the calling thread (a lock another thread holds stays locked), so the launcher forks only
while no other Python thread, JAX backend, CUDA or native thread started since the imports
runs. numpy's BLAS pool may: it stops itself around a fork.
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
