"""Watch a node's GMI processes: results, failures, stop signals; leave none behind.

The first GMI to fail is reported when it is detected (one line, then its traceback), the
others get :data:`grace <supervise>` seconds to exit on their own (they notice a dead peer
in their next collective) and are then killed; a stopped (``SIGSTOP``) or hung GMI is killed at
once. A first stop signal (SIGINT, SIGTERM, SIGHUP) to the launcher is forwarded to every GMI
(they agree to stop at the next epoch boundary, see :mod:`.stop`); a second kills them all.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from .liveness import process_state
from .stop import announce_stop, signal_name, signals_to_catch

log = logging.getLogger(__name__)
POLL_S = 0.2


class GmiFailure(RuntimeError):
    """A GMI failed; the message names it and its error."""


class GmiInterrupted(RuntimeError):
    """A stop signal ended the run before it could finish an epoch and save."""

    def __init__(self, signum: int, message: str):
        self.signum = signum
        super().__init__(message)


@dataclass
class GmiProcess:
    """One spawned GMI: its process and the pipe it reports on."""

    rank: int
    process: BaseProcess
    results: Connection
    message: tuple | None = None  # ("ok", result) or ("error", line, traceback)
    killed_by_launcher: bool = False
    _pipe_open: bool = field(default=True, repr=False)

    def read(self) -> None:
        """Take the GMI's report if it has sent one (never blocks)."""
        while self._pipe_open and self.message is None and self.results.poll():
            try:
                self.message = self.results.recv()
            except (EOFError, OSError):
                self._pipe_open = False

    @property
    def alive(self) -> bool:
        return self.process.exitcode is None

    @property
    def failed(self) -> bool:
        code = self.process.exitcode
        return (code not in (None, 0)) or (self.message is not None and self.message[0] != "ok")

    @property
    def stopped(self) -> bool:
        """Stopped by a signal (state T): it cannot exit on its own."""
        pid = self.process.pid
        return pid is not None and process_state(pid) == "stopped"

    def kill(self) -> None:
        if self.alive:
            self.killed_by_launcher = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(5)

    def describe(self) -> str:
        code, pid = self.process.exitcode, self.process.pid
        if self.message is not None and self.message[0] == "error":
            return f"GMI {self.rank} (pid {pid}) exited with code {code}: {self.message[1]}"
        if code is not None and code < 0:
            try:
                return f"GMI {self.rank} (pid {pid}) killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"GMI {self.rank} (pid {pid}) killed by signal {-code}"
        return f"GMI {self.rank} (pid {pid}) exited with code {code}"


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
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


@dataclass(frozen=True)
class Survivable:
    """GMIs whose failure the run survives (async actors: nothing waits on them in a
    collective), as long as at least ``min_alive`` of them are alive."""

    ranks: frozenset[int] = frozenset()
    min_alive: int = 0
    what: str = "actor"


def supervise(
    gmis: list[GmiProcess],
    signals: LauncherSignals,
    grace_s: float,
    survivable: Survivable = Survivable(),
) -> Any:
    """Wait for every GMI; return GMI 0's result. A failed GMI in ``survivable`` is reported
    and the run goes on; below ``survivable.min_alive`` the others are asked to stop
    gracefully (as by SIGTERM) and the run ends with :class:`GmiFailure`.

    Raises:
        GmiFailure: a GMI failed (after the others were stopped).
        GmiInterrupted: a second stop signal, or a GMI that ended because of the first.
    """
    forwarded: set[int] = set()
    lost: set[int] = set()
    too_few: str | None = None
    while True:
        if signals.forced:
            for gmi in gmis:
                gmi.kill()
            name = signal_name(signals.signum or signal.SIGINT)
            raise GmiInterrupted(signals.signum or signal.SIGINT, f"stopped at once by {name}")
        if signals.signum is not None:
            _forward(gmis, signals.signum, forwarded)
        waiting = [g.results for g in gmis if g.message is None and g._pipe_open]
        wait(waiting + [g.process.sentinel for g in gmis if g.alive], timeout=POLL_S)
        for gmi in gmis:
            gmi.read()
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
                    f"{survivable.min_alive} required (gmi.async.min_actors)"
                )
                log.error("%s: stopping the run", too_few)
                _forward(gmis, signal.SIGTERM, forwarded)
        failed = [g for g in failed if g.rank not in survivable.ranks]
        if failed:
            _report(failed[0])
            _teardown(gmis, grace_s)
            return _raise_failure(gmis, signals)
        if all(g.process.exitcode == 0 for g in gmis if g.rank not in lost):
            for gmi in gmis:
                gmi.read()
            first = gmis[0].message
            if too_few is not None:  # the trainers stopped cleanly: say where their work is
                saved = getattr(first[1], "checkpoint", None) if first is not None else None
                raise GmiFailure(f"stopped: {too_few}; final checkpoint: {saved or 'none written'}")
            if first is None:
                raise GmiFailure(f"GMI 0 (pid {gmis[0].process.pid}) exited without a result")
            return first[1]


def _forward(gmis: list[GmiProcess], signum: int, forwarded: set[int]) -> None:
    for gmi in gmis:
        if gmi.rank not in forwarded and gmi.alive:
            forwarded.add(gmi.rank)
            with contextlib.suppress(ProcessLookupError):
                os.kill(gmi.process.pid, signum)


def _report(first: GmiProcess) -> None:
    """Say at once which GMI failed; the traceback of its error follows, if it sent one."""
    log.error("%s; stopping the other GMIs", first.describe())
    if first.message is not None and first.message[0] == "error" and first.message[2]:
        log.error("GMI %d traceback:\n%s", first.rank, first.message[2].rstrip())


def _teardown(gmis: list[GmiProcess], grace_s: float) -> None:
    """Let the others exit on their own for up to ``grace_s`` (stopped ones are killed at once),
    then kill the rest."""
    deadline = time.monotonic() + grace_s
    while any(g.alive for g in gmis) and time.monotonic() < deadline:
        for gmi in gmis:
            if gmi.alive and gmi.stopped:
                gmi.kill()
        wait([g.process.sentinel for g in gmis if g.alive], timeout=0.1)
        for gmi in gmis:
            gmi.read()
    for gmi in gmis:
        gmi.kill()
        gmi.read()


def _raise_failure(gmis: list[GmiProcess], signals: LauncherSignals) -> Any:
    def on_its_own(g: GmiProcess) -> bool:
        return g.failed and (not g.killed_by_launcher or g.message is not None)

    own = [g for g in gmis if on_its_own(g)]
    stopped = [g.rank for g in gmis if g.killed_by_launcher and not on_its_own(g)]
    text = "; ".join(g.describe() for g in own) or "a GMI failed"
    if stopped:
        text += f" (the launcher stopped GMI {', '.join(map(str, stopped))})"
    if signals.signum is not None:
        raise GmiInterrupted(signals.signum, f"stopped by {signal_name(signals.signum)}: {text}")
    raise GmiFailure(text)
