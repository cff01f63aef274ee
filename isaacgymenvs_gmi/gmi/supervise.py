"""Watch a node's GMI processes: results, failures, stop signals; leave none behind.

The first GMI to fail is reported when it is detected (one line, then its traceback; the cause
before its consequences, :mod:`.gmi_process`), the others get :data:`grace <supervise>` seconds
to exit on their own (they notice a dead peer in their next collective) and are then killed; a
stopped (``SIGSTOP``) or hung GMI is killed at once. A GMI stopped by a signal for
``gmi.timeout_s`` is killed and counts as failed, and no wait is unbounded. A first stop signal
(SIGINT, SIGTERM, SIGHUP) to the launcher is forwarded to every GMI (they agree to stop at the
next epoch boundary, see :mod:`.stop`); a second kills them all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass
from multiprocessing.connection import wait
from types import FrameType
from typing import Any

from .gmi_process import GmiProcess, causes_first, failure_text
from .stop import STARTUP, announce_stop, signal_name, signals_to_catch

log = logging.getLogger(__name__)
POLL_S = 0.2
FORWARD_AGAIN_S = 1.0


class GmiFailure(RuntimeError):
    """A GMI failed; the message names it and its error."""


class GmiInterrupted(RuntimeError):
    """A stop signal ended the run before it could finish an epoch and save."""

    def __init__(self, signum: int, message: str):
        self.signum = signum
        super().__init__(message)


class LauncherSignals:
    """The launcher's stop-signal handlers: the first asks for a graceful stop, a second for
    an immediate one. Handlers only record; :func:`supervise` acts."""

    def __init__(self, gmis: list[GmiProcess]):
        self.gmis = gmis
        self.signum: int | None = None
        self.forced = False
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            announce_stop(signum)
        else:
            self.forced = True

    def __enter__(self) -> LauncherSignals:
        for sig in signals_to_catch():
            self._previous[sig] = signal.signal(sig, self._handle)
        self.signum = self.signum or STARTUP.signum  # one that came while the launcher started
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


@dataclass(frozen=True)
class Survivable:
    """GMIs whose failure the run survives (async actors, PBT members: nothing waits on them
    in a collective), as long as at least ``min_alive`` of them are alive (``min_alive_key``:
    the setting that asks for it)."""

    ranks: frozenset[int] = frozenset()
    min_alive: int = 0
    what: str = "actor"
    min_alive_key: str = "gmi.async.min_actors"


def supervise(
    gmis: list[GmiProcess],
    signals: LauncherSignals,
    grace_s: float,
    survivable: Survivable = Survivable(),
    stall_s: float = 30.0,
) -> Any:
    """Wait for every GMI; return the result of GMI 0 (of the first GMI still alive, where
    GMI 0 is survivable and was lost). A failed GMI in ``survivable`` is reported
    and the run goes on; below ``survivable.min_alive`` the others are asked to stop
    gracefully (as by SIGTERM) and the run ends with :class:`GmiFailure`. Every wait is
    bounded by ``stall_s`` (``gmi.timeout_s``): a GMI stopped by a signal (SIGSTOP) that long
    (twice that for one that is not survivable) is killed and counts as failed (survivable ones
    are dropped like dead ones); survivable GMIs still running that long after the others
    finished are killed and named.

    Raises:
        GmiFailure: a GMI failed (after the others were stopped).
        GmiInterrupted: a second stop signal, or a GMI that ended because of the first.
    """
    forwarded: dict[int, float] = {}  # GMI -> when the stop signal was last sent to it
    lost: set[int] = set()
    too_few: str | None = None
    finished_at: float | None = None  # when every GMI but survivable ones had exited cleanly
    while True:
        if signals.forced:
            for gmi in gmis:
                gmi.kill()
            name = signal_name(signals.signum or signal.SIGINT)
            raise GmiInterrupted(signals.signum or signal.SIGINT, f"stopped at once by {name}")
        if signals.signum is not None:
            _forward(gmis, signals.signum, forwarded)
        waiting = [g.results for g in gmis if g.message is None and g.pipe_open]
        wait(waiting + [g.process.sentinel for g in gmis if g.alive], timeout=POLL_S)
        now = time.monotonic()
        _kill_stalled(gmis, now, stall_s, survivable.ranks)
        for gmi in gmis:
            gmi.read()
            if gmi.failed and gmi.failed_at is None:
                gmi.failed_at = now
        failed = [g for g in gmis if g.failed and g.rank not in lost]
        for gmi in [g for g in failed if g.rank in survivable.ranks]:
            lost.add(gmi.rank)
            alive = len(survivable.ranks - lost)
            log.warning(
                "%s; the run goes on with %d of %d %s GMIs",
                gmi.describe(),
                alive,
                len(survivable.ranks),
                survivable.what,
            )
            if gmi.message is not None and gmi.message[0] == "error" and gmi.message[2]:
                log.warning("GMI %d traceback:\n%s", gmi.rank, gmi.message[2].rstrip())
            if alive < survivable.min_alive and too_few is None:
                too_few = (
                    f"{alive} {survivable.what} GMI(s) alive, fewer than the "
                    f"{survivable.min_alive} required ({survivable.min_alive_key})"
                )
                log.error("%s: stopping the run", too_few)
                _forward(gmis, signal.SIGTERM, forwarded)
        failed = [g for g in failed if g.rank not in survivable.ranks]
        if failed:
            _report(causes_first(failed)[0])
            _teardown(gmis, grace_s)
            return _raise_failure(gmis, signals)
        others = [g for g in gmis if g.rank not in survivable.ranks]  # none: all may end late
        if finished_at is None and others and all(g.process.exitcode == 0 for g in others):
            finished_at = now
        lingering = [g for g in gmis if g.rank not in lost and g.alive]
        if finished_at is not None and lingering and now - finished_at > stall_s:
            for gmi in lingering:  # survivable ones only: the others have exited
                gmi.kill(f"still running {stall_s:g} s after the run ended (gmi.timeout_s)")
                lost.add(gmi.rank)
                log.warning("%s", gmi.describe())
        if all(g.process.exitcode == 0 for g in gmis if g.rank not in lost):
            for gmi in gmis:
                gmi.read()
            alive = [g for g in gmis if g.rank not in lost]
            if not alive:
                raise GmiFailure(failure_text(gmis))
            first = alive[0].message
            if too_few is not None:  # the trainers stopped cleanly: say where their work is
                saved = getattr(first[1], "checkpoint", None) if first is not None else None
                raise GmiFailure(f"stopped: {too_few}; final checkpoint: {saved or 'none written'}")
            if first is None:
                gmi = alive[0]
                raise GmiFailure(f"GMI {gmi.rank} (pid {gmi.process.pid}) exited without a result")
            return first[1]


def _kill_stalled(
    gmis: list[GmiProcess], now: float, stall_s: float, survivable: frozenset[int]
) -> None:
    """Kill GMIs stopped by a signal (state T) too long: they cannot go on or exit. A
    survivable one after ``stall_s`` (nothing waits for it in a collective); any other after
    twice that, so that its peers, whose collectives time out after ``stall_s``, name it first
    where they can."""
    for gmi in gmis:
        if not gmi.alive:
            continue
        limit = stall_s if gmi.rank in survivable else 2 * stall_s
        if not gmi.stopped:
            gmi.stopped_since = None
        elif gmi.stopped_since is None:
            gmi.stopped_since = now
        elif now - gmi.stopped_since >= limit:
            gmi.kill(f"stopped by a signal (SIGSTOP or a debugger) for {limit:g} s")


def _forward(gmis: list[GmiProcess], signum: int, forwarded: dict[int, float]) -> None:
    """Send ``signum`` to every live GMI that has not reported, again every
    :data:`FORWARD_AGAIN_S`: one still starting ignores it until its handlers are in place
    (:func:`~.stop.stop_signals_held`); a GMI takes only the first."""
    now = time.monotonic()
    for gmi in gmis:
        last = forwarded.get(gmi.rank)
        if gmi.alive and gmi.message is None and (last is None or now - last >= FORWARD_AGAIN_S):
            forwarded[gmi.rank] = now
            with contextlib.suppress(ProcessLookupError):
                os.kill(gmi.process.pid, signum)


def _report(first: GmiProcess) -> None:
    """Say at once which GMI failed first; the traceback of its error follows, if it sent one."""
    log.error("%s; stopping the other GMIs", first.describe())
    if first.message is not None and first.message[0] == "error" and first.message[2]:
        log.error("GMI %d traceback:\n%s", first.rank, first.message[2].rstrip())


def _teardown(gmis: list[GmiProcess], grace_s: float) -> None:
    """Let the others exit on their own for up to ``grace_s`` (stopped ones are killed at once,
    and named as stopped), then kill the rest."""
    deadline = time.monotonic() + grace_s
    while any(g.alive for g in gmis) and time.monotonic() < deadline:
        for gmi in gmis:
            if gmi.alive and gmi.stopped:
                gmi.kill("stopped by a signal (SIGSTOP or a debugger)")
        wait([g.process.sentinel for g in gmis if g.alive], timeout=0.1)
        for gmi in gmis:
            gmi.read()
    for gmi in gmis:
        gmi.kill()
        gmi.read()


def _raise_failure(gmis: list[GmiProcess], signals: LauncherSignals) -> Any:
    text = failure_text(gmis)
    if signals.signum is not None:
        raise GmiInterrupted(signals.signum, f"stopped by {signal_name(signals.signum)}: {text}")
    raise GmiFailure(text)
