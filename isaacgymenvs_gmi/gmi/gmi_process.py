"""One GMI process as its launcher sees it: its report, its state, how it ended, and why.

A failed run is described cause first: GMIs that failed on their own, in the order seen, then
those whose error is a consequence (a collective timed out waiting for a peer), whatever rank.
"""

from __future__ import annotations

import contextlib
import os
import signal
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from .liveness import process_state

PEER_TIMEOUT = "GmiTimeoutError"  # the error a GMI reports when a peer did not show up


@dataclass
class GmiProcess:
    """One spawned GMI: its process and the pipe it reports on.

    Attributes:
        message: ``("ok", result)`` or ``("error", line, traceback)``, once sent.
        verdict: why the launcher killed it, when it did so for a reason of the GMI's own
            (stopped by a signal too long, still running after the run ended).
        failed_at: when the launcher first saw it fail (its monotonic clock).
    """

    rank: int
    process: BaseProcess
    results: Connection
    message: tuple | None = None
    killed_by_launcher: bool = False
    verdict: str | None = None
    failed_at: float | None = None
    stopped_since: float | None = None
    pipe_open: bool = field(default=True, repr=False)

    def read(self) -> None:
        """Take the GMI's report if it has sent one (never blocks)."""
        while self.pipe_open and self.message is None and self.results.poll():
            try:
                self.message = self.results.recv()
            except (EOFError, OSError):
                self.pipe_open = False

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

    @property
    def on_its_own(self) -> bool:
        """It failed for a reason of its own, not because the launcher tore the run down."""
        reported = self.message is not None and self.message[0] == "error"
        return self.failed and (not self.killed_by_launcher or reported or bool(self.verdict))

    @property
    def consequence(self) -> bool:
        """Its error is that a peer did not show up: a symptom of another GMI's failure."""
        message = self.message
        return message is not None and message[0] == "error" and message[1].startswith(PEER_TIMEOUT)

    def kill(self, verdict: str | None = None) -> None:
        """SIGKILL it (if alive) and reap it; ``verdict``: why, when it is the GMI's doing."""
        if self.alive:
            self.killed_by_launcher = True
            self.verdict = self.verdict or verdict
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.process.pid, signal.SIGKILL)
        self.process.join(5)

    def describe(self) -> str:
        code, pid = self.process.exitcode, self.process.pid
        if self.verdict is not None:
            return f"GMI {self.rank} (pid {pid}) {self.verdict}: killed"
        if self.message is not None and self.message[0] == "error":
            return f"GMI {self.rank} (pid {pid}) exited with code {code}: {self.message[1]}"
        if code is not None and code < 0:
            try:
                return f"GMI {self.rank} (pid {pid}) killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"GMI {self.rank} (pid {pid}) killed by signal {-code}"
        return f"GMI {self.rank} (pid {pid}) exited with code {code}"


def causes_first(gmis: list[GmiProcess]) -> list[GmiProcess]:
    """The GMIs that failed on their own: causes in the order they were seen to fail, then
    consequences (peer timeouts)."""
    own = [g for g in gmis if g.on_its_own]
    return sorted(own, key=lambda g: (g.consequence, g.failed_at or float("inf"), g.rank))


def failure_text(gmis: list[GmiProcess]) -> str:
    """One line: every GMI that failed on its own, cause first, then the ones the launcher
    stopped because of it."""
    own = causes_first(gmis)
    text = "; ".join(g.describe() for g in own) or "a GMI failed"
    stopped = [g.rank for g in gmis if g.killed_by_launcher and not g.on_its_own]
    if stopped:
        text += f" (the launcher stopped GMI {', '.join(map(str, stopped))})"
    return text
