"""How the launcher starts its GMIs: by forking itself where that is safe, else by spawning.

A forked GMI starts with everything the launcher has imported (torch, JAX, MuJoCo, rl-games:
seconds per GMI on a small machine); a spawned one imports it all again. A fork copies only the
calling thread, and a lock another thread holds stays locked in the child, so the launcher forks
only while nothing but fork-aware pools run beside its main thread: no other Python thread, no
JAX backend (its thread pools), no CUDA (a driver started before a fork is unusable in the
child), and no store server yet. numpy's BLAS pool may run: it stops itself around a fork, which
is what lets PyTorch's data loaders fork too. The launcher keeps JAX and CUDA unstarted on
machines where nothing installed could use a GPU (:func:`~isaacgymenvs_gmi.config.sim.
detect_platform`, the task checks); runs on a GPU, or with ``gmi.start=spawn``, spawn.
"""

from __future__ import annotations

import sys
import threading
from typing import Literal

StartMethod = Literal["fork", "spawn"]


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
