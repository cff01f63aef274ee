"""Graceful stop: Ctrl-C, SIGTERM or SIGHUP (the terminal closed) ends a run at the next epoch
boundary with a checkpoint. A run started under ``nohup`` (SIGHUP ignored) keeps ignoring it.

A GMI never stops on its own when asked: it records the first stop signal (:class:`StopRequest`)
and the body asks, at each epoch boundary, whether any GMI was asked (one tiny collective, so
every GMI stops after the same epoch). GMI 0 then writes the final checkpoint and the run exits
with ``128 + signal`` (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).

A second signal stops at once: the launcher of spawned GMIs kills them (their own handlers never
exit, because a Ctrl-C in a terminal reaches every process of the group); a run in one process
raises :class:`StopNow` from the handler.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
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


class StopRequest:
    """Records the first stop signal this process receives.

    ``second_stops_now``: a further signal raises :class:`StopNow` (a run in one process, which
    also says on stderr that it is stopping); otherwise further signals are ignored (a spawned
    GMI: its launcher decides and speaks).
    """

    def __init__(self, *, second_stops_now: bool):
        self.signum: int | None = None
        self.second_stops_now = second_stops_now
        self._previous: dict[int, object] = {}

    def install(self) -> StopRequest:
        for sig in signals_to_catch():
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        self._previous.clear()

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
        self.restore()


def announce_stop(signum: int) -> None:
    """The one line a launcher prints at the first stop signal (safe in a signal handler)."""
    line = f"{signal_name(signum)}: stopping after this epoch with a checkpoint (again: at once)"
    os.write(sys.stderr.fileno(), (line + "\n").encode())


def never_stop() -> int | None:
    """The stop check of a body that is not asked to stop (tests, play)."""
    return None
