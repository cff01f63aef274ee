"""Collectives that, when they time out, say which GMI did not show up (a stall inspector).

Every GMI records in the store how many collectives it has entered and its host:pid; on a
timeout the others' counters name who is behind, and a local GMI that reached the collective
and then stopped or exited is named too.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

from isaacgymenvs_gmi.comm.store import Store

from .liveness import process_state

log = logging.getLogger(__name__)
T = TypeVar("T")
KEY = "gmi/progress/{}"


class GmiTimeoutError(RuntimeError):
    """A collective did not complete in time; the message names the GMIs that were missing."""


class CollectiveGuard:
    """Runs this GMI's collectives; ``store`` is shared by all GMIs, ``key`` (a format string
    of the rank) is where each records its progress; ``after`` runs once each collective has
    returned (``gmi.debug.sync`` waits for the device there)."""

    def __init__(
        self,
        store: Store,
        rank: int,
        world_size: int,
        timeout_s: float,
        key: str = KEY,
        after: Callable[[], None] | None = None,
    ):
        self.store, self.rank, self.world_size = store, rank, world_size
        self.timeout_s, self.key, self.after = timeout_s, key, after
        self.count = 0
        self.seconds = 0.0  # spent in collectives so far (the epoch split's "collectives")
        self.where = f"{socket.gethostname()}:{os.getpid()}"  # host:pid, no spaces
        self.store.set(key.format(rank), f"0 {self.where} start")

    def __call__(self, what: str, fn: Callable[[], T]) -> T:
        self.count += 1
        self.store.set(self.key.format(self.rank), f"{self.count} {self.where} {what}")
        start = time.perf_counter()
        try:
            result = fn()
        except RuntimeError as err:  # gloo/NCCL timeouts and peer resets
            raise GmiTimeoutError(self.diagnose(what, err)) from err
        if self.after is not None:
            self.after()
        self.seconds += time.perf_counter() - start
        return result

    def diagnose(self, what: str, err: BaseException) -> str:
        behind = []
        with contextlib.suppress(AttributeError, RuntimeError):
            self.store.set_timeout(timedelta(seconds=5))
        for r in range(self.world_size):
            if r == self.rank:
                continue
            try:
                count, where, name = self.store.get(self.key.format(r)).decode().split(" ", 2)
            except Exception:  # noqa: BLE001 - store gone: its host GMI or agent died
                behind.append(f"GMI {r} (no progress record reachable)")
                continue
            if int(count) < self.count:
                behind.append(f"GMI {r} (stuck after collective #{count}: {name})")
            elif (state := _local_state(where)) in ("stopped", "gone", "zombie"):
                then = (
                    "stopped by a signal (SIGSTOP or a debugger)"
                    if state == "stopped"
                    else "exited"
                )
                behind.append(f"GMI {r} (reached it, then {then})")
        who = "; missing: " + ", ".join(behind) if behind else "; every GMI reached it"
        return (
            f"GMI {self.rank}: collective #{self.count} ({what}) failed after up to "
            f"{self.timeout_s:.0f} s{who}. Cause: {str(err).splitlines()[0][:200]}"
        )


def _local_state(where: str) -> str | None:
    """The state of the process ``host:pid`` when it runs on this host (None elsewhere: a pid
    means nothing on another machine)."""
    host, _, pid = where.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return None
    return process_state(int(pid))
