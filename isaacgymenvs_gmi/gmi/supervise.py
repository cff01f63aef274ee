"""Watch a node's GMI processes: results, failures, stop signals; leave none behind.

The first GMI to fail is reported at once (cause before consequences, :mod:`.gmi_process`); the
others get ``grace_s`` to exit, then are killed (a stopped one at once). No wait is unbounded. A
first stop signal to the launcher is forwarded to every GMI (:mod:`.stop`); a second kills all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from multiprocessing.connection import wait
from types import FrameType
from typing import Any

from isaacgymenvs_gmi.placement.run_plan import ModeTerms

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
    an immediate one. Handlers only record; :class:`Supervisor` acts."""

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


class Supervisor:
    """Waits for every GMI of a node (:meth:`run`). A failed GMI that ``terms`` call expendable
    (async actors, PBT members) is reported and the run goes on; below ``terms.min_alive`` the
    others are stopped as by SIGTERM and the run ends with :class:`GmiFailure`. ``stall_s``
    (``gmi.timeout_s``) bounds every wait: a GMI stopped by a signal that long (twice, if not
    expendable), or an expendable one still running that long after the others, is killed."""

    def __init__(
        self,
        gmis: list[GmiProcess],
        signals: LauncherSignals,
        grace_s: float,
        terms: ModeTerms,
        stall_s: float = 30.0,
    ):
        self.gmis, self.signals, self.grace_s = gmis, signals, grace_s
        self.terms, self.stall_s = terms, stall_s
        self.expendable = frozenset(terms.expendable)
        self.forwarded: dict[int, float] = {}  # GMI -> when the stop signal was last sent to it
        self.lost: set[int] = set()  # expendable GMIs given up
        self.too_few: str | None = None  # why the run stops: too few expendable GMIs left
        self.finished_at: float | None = None  # when all but expendable GMIs exited cleanly

    def run(self) -> Any:
        """The result of GMI 0 (or of the first alive, where an expendable GMI 0 was lost).

        Raises:
            GmiFailure: a GMI failed (after the others were stopped).
            GmiInterrupted: a second stop signal, or a GMI that ended because of the first.
        """
        while True:
            self._obey_signals()
            now = self._wait()
            failed = [g for g in self.gmis if g.failed and g.rank not in self.lost]
            for gmi in failed:
                if gmi.rank in self.expendable:
                    self._drop(gmi)
            fatal = [g for g in failed if g.rank not in self.expendable]
            if fatal:
                _report(causes_first(fatal)[0])
                _teardown(self.gmis, self.grace_s)
                return _raise_failure(self.gmis, self.signals)
            self._end_lingering(now)
            if all(g.process.exitcode == 0 for g in self.gmis if g.rank not in self.lost):
                return self._result()

    def _obey_signals(self) -> None:
        """A second stop signal kills every GMI; the first is forwarded to them."""
        signum = self.signals.signum
        if self.signals.forced:
            for gmi in self.gmis:
                gmi.kill()
            signum = signum or signal.SIGINT
            raise GmiInterrupted(signum, f"stopped at once by {signal_name(signum)}")
        if signum is not None:
            _forward(self.gmis, signum, self.forwarded)

    def _wait(self) -> float:
        """Until a GMI reports or exits (at most POLL_S); kill the stalled, read every report.
        Returns the time after the wait."""
        gmis = self.gmis
        waiting = [g.results for g in gmis if g.message is None and g.pipe_open]
        wait(waiting + [g.process.sentinel for g in gmis if g.alive], timeout=POLL_S)
        now = time.monotonic()
        _kill_stalled(gmis, now, self.stall_s, self.expendable)
        for gmi in gmis:
            gmi.read()
            if gmi.failed and gmi.failed_at is None:
                gmi.failed_at = now
        return now

    def _drop(self, gmi: GmiProcess) -> None:
        """Report a lost expendable GMI; below the minimum, ask the others to stop."""
        terms = self.terms
        self.lost.add(gmi.rank)
        alive = len(self.expendable - self.lost)
        log.warning(
            "%s; the run goes on with %d of %d %s GMIs",
            gmi.describe(),
            alive,
            len(self.expendable),
            terms.expendable_what,
        )
        if gmi.message is not None and gmi.message[0] == "error" and gmi.message[2]:
            log.warning("GMI %d traceback:\n%s", gmi.rank, gmi.message[2].rstrip())
        if alive < terms.min_alive and self.too_few is None:
            self.too_few = (
                f"{alive} {terms.expendable_what} GMI(s) alive, fewer than the "
                f"{terms.min_alive} required ({terms.min_alive_key})"
            )
            log.error("%s: stopping the run", self.too_few)
            _forward(self.gmis, signal.SIGTERM, self.forwarded)

    def _end_lingering(self, now: float) -> None:
        """Kill expendable GMIs still running ``stall_s`` after all the others exited cleanly."""
        others = [g for g in self.gmis if g.rank not in self.expendable]
        if self.finished_at is None and others and all(g.process.exitcode == 0 for g in others):
            self.finished_at = now
        lingering = [g for g in self.gmis if g.rank not in self.lost and g.alive]
        if self.finished_at is not None and lingering and now - self.finished_at > self.stall_s:
            for gmi in lingering:  # expendable ones only: the others have exited
                gmi.kill(f"still running {self.stall_s:g} s after the run ended (gmi.timeout_s)")
                self.lost.add(gmi.rank)
                log.warning("%s", gmi.describe())

    def _result(self) -> Any:
        """Every GMI not given up exited cleanly: the first one's result."""
        for gmi in self.gmis:
            gmi.read()
        alive = [g for g in self.gmis if g.rank not in self.lost]
        if not alive:
            raise GmiFailure(failure_text(self.gmis))
        first = alive[0].message
        if self.too_few is not None:  # the others stopped cleanly: say where their work is
            saved = getattr(first[1], "checkpoint", None) if first is not None else None
            saved = saved or "none written"
            raise GmiFailure(f"stopped: {self.too_few}; final checkpoint: {saved}")
        if first is None:
            gmi = alive[0]
            raise GmiFailure(f"GMI {gmi.rank} (pid {gmi.process.pid}) exited without a result")
        return first[1]


def _kill_stalled(
    gmis: list[GmiProcess], now: float, stall_s: float, expendable: frozenset[int]
) -> None:
    """Kill GMIs stopped by a signal (state T) too long: an expendable one after ``stall_s``,
    any other after twice that, so that its peers' collective timeouts name it first."""
    for gmi in gmis:
        if not gmi.alive:
            continue
        limit = stall_s if gmi.rank in expendable else 2 * stall_s
        if not gmi.stopped:
            gmi.stopped_since = None
        elif gmi.stopped_since is None:
            gmi.stopped_since = now
        elif now - gmi.stopped_since >= limit:
            gmi.kill(f"stopped by a signal (SIGSTOP or a debugger) for {limit:g} s")


def _forward(gmis: list[GmiProcess], signum: int, forwarded: dict[int, float]) -> None:
    """Send ``signum`` to every live GMI that has not reported, again every
    :data:`FORWARD_AGAIN_S` (one still starting ignores it, :func:`~.stop.stop_signals_held`)."""
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
    """Let the GMIs exit on their own for up to ``grace_s`` (stopped ones are killed at once),
    then kill the rest."""
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
