"""A trainer's watch over its actors: one alive but silent (no heartbeat) for ``gmi.timeout_s``
is hung: it is killed (SIGKILL) and dropped like a dead one.

An actor beats at every env step and while it waits for room, so a stale heartbeat means it is
stuck in its own code; before its first chunk it gets the start-up allowance instead. A stopped
actor (SIGSTOP) is left to the launcher; actors on another node (no pid) are not watched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from collections.abc import Callable, Mapping

from isaacgymenvs_gmi.channels.route import (
    ACTOR_PID,
    ACTOR_STATE,
    HEARTBEAT_NS,
    PRODUCED_CHUNKS,
    RUNNING,
    Route,
)
from isaacgymenvs_gmi.gmi.liveness import process_state

log = logging.getLogger(__name__)
CHECK_EVERY_S = 0.5


class ActorWatch:
    """Watches the actors of ``routes`` (actor GMI -> route).

    Args:
        timeout_s: how stale a heartbeat may be once the actor has sent a chunk.
        startup_s: how stale before its first chunk.
        clock_ns: the heartbeats' clock (``time.monotonic_ns``; the same in every process).
        kill: how a hung actor's pid is ended.
    """

    def __init__(
        self,
        routes: Mapping[int, Route],
        timeout_s: float,
        startup_s: float,
        clock_ns: Callable[[], int] = time.monotonic_ns,
        kill: Callable[[int], None] | None = None,
    ):
        self.routes, self.timeout_s, self.startup_s = dict(routes), timeout_s, startup_s
        self.clock_ns, self.kill = clock_ns, kill or _sigkill
        self.dropped: dict[int, str] = {}  # actor GMI -> why
        self._next_check_ns = 0

    def check(self) -> list[int]:
        """Drop (and return) the actors hung since the last check (every :data:`CHECK_EVERY_S`)."""
        now = self.clock_ns()
        if now < self._next_check_ns:
            return []
        self._next_check_ns = now + int(CHECK_EVERY_S * 1e9)
        hung = []
        for actor, route in self.routes.items():
            why = None if actor in self.dropped else self._hung(route, now)
            if why is not None:
                pid = route.control(ACTOR_PID)
                msg = "actor GMI %d (pid %d) %s: hung, dropped like a dead one (killed)"
                log.warning(msg, actor, pid, why)
                self.dropped[actor] = why
                self.kill(pid)
                hung.append(actor)
        return hung

    def _hung(self, route: Route, now_ns: int) -> str | None:
        pid, beat = route.control(ACTOR_PID), route.control(HEARTBEAT_NS)
        if pid <= 0 or beat <= 0 or route.control(ACTOR_STATE) != RUNNING:
            return None  # on another node, not started yet, or stopped on its own
        sent = route.control(PRODUCED_CHUNKS) > 0
        limit = self.timeout_s if sent else self.startup_s
        silent_s = (now_ns - beat) / 1e9
        if silent_s < limit:
            return None
        state = process_state(pid)
        if state in ("gone", "stopped"):  # dead, or the launcher's to name and clear
            return None
        when = "" if sent else " before its first chunk"
        return f"has not stepped for {silent_s:.0f} s{when} (limit {limit:g} s, gmi.timeout_s)"


def _sigkill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
