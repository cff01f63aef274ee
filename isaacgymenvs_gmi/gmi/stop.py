"""Graceful stop: Ctrl-C, SIGTERM or SIGHUP (unless ignored, as under ``nohup``) ends a run at
the next epoch boundary with a checkpoint and exit code ``128 + signal``.

Each GMI records the first stop signal (:class:`StopRequest`); at each epoch boundary the body
asks whether any GMI was asked (one tiny collective, so all stop after the same epoch). A second
signal stops at once: the launcher kills spawned GMIs (their handlers never exit); a run in one
process raises :class:`StopNow`. During start-up :data:`STARTUP` records a signal instead of
raising, and GMIs start with stop signals held back (:func:`stop_signals_held`) until their
handlers are in place.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def signals_to_catch() -> list[signal.Signals]:
    """The stop signals this process takes over: all, but SIGHUP only where it is not ignored
    (``nohup`` asks a run to outlive its terminal)."""
    return [
        sig
        for sig in STOP_SIGNALS
        if sig != signal.SIGHUP or signal.getsignal(sig) is not signal.SIG_IGN
    ]


StopCheck = Callable[[], "int | None"]  # at an epoch boundary: the agreed stop signal, or None


class StopNow(BaseException):
    """A second stop signal in a run of one process: leave now, without a final checkpoint."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(f"stopped at once by {signal.Signals(signum).name}")


def exit_code(signum: int) -> int:
    """The shell's code for a process ended by ``signum``: 130 for SIGINT, 143 for SIGTERM, 129
    for SIGHUP."""
    return 128 + int(signum)


def signal_name(signum: int) -> str:
    return signal.Signals(signum).name


class StartupStop:
    """Stop signals while the launcher starts: the first is recorded (:attr:`signum`) and said,
    a second exits at once with the signal's code; after :meth:`run_ended`, they are ignored."""

    def __init__(self) -> None:
        self.signum: int | None = None

    def install(self) -> StartupStop:
        for sig in signals_to_catch():
            signal.signal(sig, self._handle)
        return self

    def run_ended(self) -> None:
        """The run ended on its own: stop signals are ignored from now to the process's exit
        (:func:`ignore_stop_signals`)."""
        ignore_stop_signals()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            os.write(sys.stderr.fileno(), f"stopped at once by {signal_name(signum)}\n".encode())
            os._exit(exit_code(signum))  # nothing has started that needs cleaning up
        self.signum = signum
        os.write(
            sys.stderr.fileno(), f"{signal_name(signum)}: stopping (again: at once)\n".encode()
        )


STARTUP = StartupStop()  # installed by the command line; adopted by the run's own handlers


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold the stop signals back meanwhile: blocked here (delivered when this ends); a process
    started meanwhile starts with them ignored (exec keeps that) and blocked (fork), until its
    handlers are in place (:meth:`StopRequest.install`, :func:`unblock_stop_signals`); its
    launcher forwards a missed signal again."""
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    handlers = {sig: signal.signal(sig, signal.SIG_IGN) for sig in signals_to_catch()}
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)


def ignore_stop_signals() -> None:
    """Ignore stop signals until exit (work done and reported): else the interpreter's shutdown
    would restore their default action and die of a late Ctrl-C."""
    for sig in signals_to_catch():
        signal.signal(sig, signal.SIG_IGN)


def unblock_stop_signals() -> None:
    """Let held-back stop signals through (to the handlers now installed)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


class StopRequest:
    """Records the first stop signal this process receives. ``second_stops_now``: a further
    signal raises :class:`StopNow` and the first is announced (a run in one process); else
    further ones are ignored (a spawned GMI). ``signals``: those to take over (a spawned GMI
    takes its launcher's list, having started with them all ignored)."""

    def __init__(self, *, second_stops_now: bool, signals: Sequence[signal.Signals] | None = None):
        self.signum: int | None = None
        self.second_stops_now = second_stops_now
        self.signals = signals  # default: signals_to_catch() when installed
        self._previous: dict[int, object] = {}

    def install(self) -> StopRequest:
        """Take the stop signals over (one received during start-up counts as the first)."""
        for sig in signals_to_catch() if self.signals is None else self.signals:
            self._previous[sig] = signal.signal(sig, self._handle)
        self.signum = self.signum or STARTUP.signum
        return self

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
            if self.second_stops_now:
                announce_stop(signum)
        elif self.second_stops_now:
            raise StopNow(signum)

    def __enter__(self) -> StopRequest:
        return self.install()

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()


def announce_stop(signum: int) -> None:
    """The one line a launcher prints at the first stop signal (safe in a signal handler)."""
    line = f"{signal_name(signum)}: stopping after this epoch with a checkpoint (again: at once)"
    os.write(sys.stderr.fileno(), (line + "\n").encode())


def never_stop() -> int | None:
    """The stop check of a body that is not asked to stop (tests, play)."""
    return None
