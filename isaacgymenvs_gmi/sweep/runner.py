"""Starts a sweep's job processes as slots free up, watches them, and stops them early or on a
signal.

Jobs start in queue order, each once its GMIs fit free slots of one device, in a session of its
own (a signal to the terminal's group reaches the launcher only) with the stop signals held back
until its handler is in place; it stops gracefully if the launcher dies. Its output goes to
``<job folder>/job.log``; its progress lines feed the live table and the pruner, whose losers
are asked to stop gracefully (a checkpoint at their next epoch).

Stop signals to the launcher escalate, and no queued job starts after the first:

1. the first is forwarded to every running job: each stops at its next epoch, checkpointed;
2. the second sends SIGTERM to every job (it stops at once);
3. the third, or ``KILL_AFTER_S`` after the second, sends SIGKILL to every job's process group.

A stopped job (SIGSTOP) is continued before it is signalled, so none can hold the sweep.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from isaacgymenvs_gmi.gmi.stop import STOP_SIGNALS, signal_name, signals_to_catch

from .jobs import JobSpec
from .pruning import Pruned, SweepPruner
from .slots import Lease, SlotPool

POLL_S = 0.2
KILL_AFTER_S = 10.0  # after the second stop signal, jobs still running are killed
PROGRESS = re.compile(
    r"\[GMI x\d+\] (?:\S+ )?epoch (\d+)(?:/(\d+))? frames [\d,]+ \| ([\d,]+) env steps/s"
    r".*?\| mean reward (\S+) \| (.*)$"
)


@dataclass
class Progress:
    epoch: int
    max_epochs: int | None
    steps_per_s: float
    reward: float | None
    timing: str  # "elapsed 0:10, ETA 0:05"


@dataclass
class JobState:
    """A job's life: queued, running (``proc``), then ended with an exit code."""

    spec: JobSpec
    lease: Lease | None = None
    proc: subprocess.Popen | None = None
    started: float | None = None  # wall-clock seconds (time.time)
    ended: float | None = None
    exit_code: int | None = None
    result: dict | None = None  # what the run wrote (None: it wrote nothing)
    progress: Progress | None = None
    tail: deque = field(default_factory=lambda: deque(maxlen=20))  # its last output lines
    reader: threading.Thread | None = None  # copies its output to its log
    rewards: list = field(default_factory=list)  # (epoch, mean reward) as its lines show them
    reported: int = 0  # how many of them the pruner has seen
    pruned: Pruned | None = None  # why the pruner stopped it
    killed: bool = False  # by the launcher's escalation (a third stop signal, or a timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.exit_code is None

    @property
    def error(self) -> str | None:
        """Why the job failed, or None if it ran to its end (or was stopped gracefully)."""
        if self.exit_code is None:
            return "not started" if self.proc is None else None
        if self.killed:
            return "killed by the sweep (stop signals escalated)"
        if self.exit_code < 0:
            return f"killed by {signal_name(-self.exit_code)}"
        if self.result is not None:
            return None
        errors = [line for line in self.tail if line.startswith("error:")]
        why = errors[-1] if errors else (self.tail[-1] if self.tail else "no output")
        return f"exit code {self.exit_code}: {why[:300]}"


class SweepRunner:
    """Runs ``jobs`` on ``pool``'s slots. ``environment(lease)``: the variables a job's process
    gets for its slot; ``on_*``: the console's hooks; ``pruner``: told of every job's start,
    per-epoch reward and end; ``value(state)``: an ended job's objective, for the pruner."""

    def __init__(
        self,
        jobs: list[JobSpec],
        pool: SlotPool,
        source_args: list[str],
        environment: Callable[[Lease], dict[str, str]],
        on_start: Callable[[JobState], None],
        on_end: Callable[[JobState], None],
        on_tick: Callable[[list[JobState]], None],
        pruner: SweepPruner | None = None,
        value: Callable[[JobState], float | None] = lambda state: None,
    ):
        self.states = [JobState(job) for job in jobs]
        self.pool, self.source_args, self.environment = pool, source_args, environment
        self.on_start, self.on_end, self.on_tick = on_start, on_end, on_tick
        self.pruner, self.value = pruner, value
        self.stop_signal: int | None = None
        self.signals = 0  # stop signals received
        self.kill_at: float | None = None  # monotonic time the escalation kills at

    def run(self) -> list[JobState]:
        """Until every job has ended (or, after a stop signal, every started one)."""
        with self._forwarding_signals():
            queue = deque(self.states)
            while True:
                while queue and self.stop_signal is None:
                    lease = self.pool.take(queue[0].spec.gmis)
                    if lease is None:
                        break
                    self._start(queue.popleft(), lease)
                for state in self.states:
                    if state.running:
                        self._judge(state)
                        if state.proc.poll() is not None:
                            self._finish(state)
                if self.kill_at is not None and time.monotonic() >= self.kill_at:
                    self._kill_all()
                self.on_tick(self.states)
                if not any(s.running for s in self.states) and (not queue or self.stop_signal):
                    break
                time.sleep(POLL_S)
        return self.states

    # --- one job --------------------------------------------------------------------------
    def _start(self, state: JobState, lease: Lease) -> None:
        spec = state.spec
        spec.folder.mkdir(parents=True, exist_ok=True)
        spec.result_file.unlink(missing_ok=True)
        env = {**os.environ, **self.environment(lease), "PYTHONUNBUFFERED": "1"}
        with _stop_signals_blocked():  # the job takes them once its handler is in place
            state.proc = subprocess.Popen(
                spec.command(self.source_args, lease.cores),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                env=env,
                start_new_session=True,
            )
        state.lease, state.started = lease, time.time()
        state.reader = threading.Thread(target=self._read, args=(state,), daemon=True)
        state.reader.start()
        if self.pruner is not None:
            self.pruner.started(spec.idx)
        self.on_start(state)

    def _read(self, state: JobState) -> None:
        with open(state.spec.log_file, "w") as log:
            for line in state.proc.stdout:
                log.write(line)
                log.flush()
                line = line.rstrip("\n")
                state.tail.append(line)
                found = PROGRESS.search(line)
                if found:
                    state.progress = _progress(found)
                    if state.progress.reward is not None:
                        state.rewards.append((state.progress.epoch, state.progress.reward))

    def _judge(self, state: JobState) -> None:
        """Report the job's new epochs to the pruner; stop it gracefully when it says so."""
        if self.pruner is None or state.pruned is not None or self.stop_signal is not None:
            return
        while state.reported < len(state.rewards):
            epoch, reward = state.rewards[state.reported]
            state.reported += 1
            decision = self.pruner.report(state.spec.idx, epoch, reward)
            if decision is not None:
                state.pruned = decision
                _signal_job(state, signal.SIGINT)  # a checkpoint at its next epoch
                return

    def _finish(self, state: JobState) -> None:
        state.exit_code = state.proc.returncode
        state.ended = time.time()
        state.reader.join(timeout=2)  # its last lines (an error) in its tail
        with contextlib.suppress(OSError, ValueError):
            state.result = json.loads(state.spec.result_file.read_text())
        self.pool.give_back(state.lease)
        if self.pruner is not None:
            self.pruner.finished(state.spec.idx, self.value(state), state.pruned is not None)
        self.on_end(state)

    # --- signals ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _forwarding_signals(self) -> Iterator[None]:
        def forward(signum, frame) -> None:
            self.signals += 1
            self.stop_signal = self.stop_signal or signum
            if self.signals == 1:
                note, sent = "stopping every job at its next epoch, with a checkpoint", signum
            elif self.signals == 2:
                note = (
                    f"stopping every job now (SIGTERM); still running in {KILL_AFTER_S:.0f} s "
                    "or at the next signal: killed"
                )
                sent = signal.SIGTERM
                self.kill_at = time.monotonic() + KILL_AFTER_S
            else:
                self.kill_at = time.monotonic()  # the loop kills them
                note, sent = "killing every job", None
            os.write(2, f"sweep: {signal_name(signum)}: {note}\n".encode())
            if sent is not None:
                for state in self.states:
                    if state.running:
                        _signal_job(state, sent)

        previous = {sig: signal.signal(sig, forward) for sig in signals_to_catch()}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _kill_all(self) -> None:
        """SIGKILL to the process group of every job still running; said once per job."""
        self.kill_at = None
        for state in self.states:
            if state.running and not state.killed:
                state.killed = True
                _signal_job(state, signal.SIGKILL)
                os.write(2, f"sweep: {state.spec.label} killed (SIGKILL)\n".encode())


def _signal_job(state: JobState, signum: int) -> None:
    """``signum`` to a running job's process, continued first should it be stopped (SIGSTOP);
    SIGKILL to its whole process group (its session: the job and its GMIs)."""
    pid = state.proc.pid
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGCONT)
        if signum == signal.SIGKILL:
            os.killpg(pid, signum)
        else:
            os.kill(pid, signum)


@contextlib.contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Block the stop signals here meanwhile; a process started meanwhile inherits the block."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _progress(found: re.Match) -> Progress:
    epoch, max_epochs, rate, reward, timing = found.groups()
    try:
        value: float | None = float(reward)
    except ValueError:
        value = None  # "-": no episode has ended yet
    return Progress(
        int(epoch),
        int(max_epochs) if max_epochs else None,
        float(rate.replace(",", "")),
        value,
        timing.split(" | ")[0].strip(),
    )
