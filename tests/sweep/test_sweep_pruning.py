"""Sweeps that stop their losers early, and stop signals that escalate: Optuna's pruners fed
per-epoch rewards in one process; the runner's escalation on real processes that ignore Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from omegaconf import OmegaConf

from isaacgymenvs_gmi.sweep import runner as runner_module
from isaacgymenvs_gmi.sweep.jobs import JobSpec
from isaacgymenvs_gmi.sweep.report import status
from isaacgymenvs_gmi.sweep.runner import SweepRunner
from isaacgymenvs_gmi.sweep.settings import LauncherSettings
from isaacgymenvs_gmi.sweep.slots import SlotPool

pytest.importorskip("optuna")
from isaacgymenvs_gmi.sweep.pruning import SweepPruner  # noqa: E402
from tests.speed import budget


def test_median_stops_a_job_below_the_finished_jobs_median_after_its_warm_up():
    settings = LauncherSettings(prune="median", warmup_epochs=2, startup_jobs=2)
    pruner = SweepPruner(settings, max_epochs=10)
    for job, slope in ((0, 10.0), (1, 20.0)):  # two good jobs run to the end
        pruner.started(job)
        for epoch in range(1, 11):
            assert pruner.report(job, epoch, slope * epoch) is None
        pruner.finished(job, slope * 10, pruned=False)
    pruner.started(2)  # a job that cannot learn
    verdicts = [pruner.report(2, epoch, 1.0) for epoch in (1, 2, 3)]
    assert verdicts[:2] == [None, None]  # warm-up
    assert verdicts[2].epoch == 3
    assert verdicts[2].text() == "pruned at epoch 3 (median of 2 finished jobs was 45.0)"
    pruner.finished(2, 1.0, pruned=True)
    pruner.started(3)  # a good one is judged against the same median and goes on
    assert all(pruner.report(3, e, 30.0 * e) is None for e in range(1, 11))
    states = [t.state.name for t in pruner.study.trials]
    assert states == ["COMPLETE", "COMPLETE", "PRUNED", "RUNNING"]


def test_successive_halving_keeps_the_top_share_of_the_jobs_at_each_rung():
    settings = LauncherSettings(prune="halving", warmup_epochs=0, min_epochs=2, reduction_factor=2)
    pruner = SweepPruner(settings, max_epochs=8)
    for job in range(4):  # all running at once: ASHA does not wait for finished jobs
        pruner.started(job)
    stopped = {}
    for epoch in range(1, 9):
        for job in range(4):  # job 0 learns fastest and reaches each rung first
            if job not in stopped and (v := pruner.report(job, epoch, 10.0 * (4 - job) + epoch)):
                stopped[job] = v
    assert sorted(stopped) == [1, 2, 3], stopped  # behind the first at the first rung
    assert {v.epoch for v in stopped.values()} == {2}  # the first rung: min_epochs
    assert stopped[1].why == "halving: not in the top 1/2 of the 2 jobs that reached it, best 42.0"


class FakeJob(JobSpec):
    """A job whose process runs ``code`` instead of train.py."""

    code: str = ""

    def command(self, source_args, cores):
        return [sys.executable, "-c", self.code]


def _fake_jobs(tmp_path: Path, *codes: str) -> list[FakeJob]:
    jobs = []
    for i, code in enumerate(codes):
        folder = tmp_path / str(i)
        spec = FakeJob(i, (), OmegaConf.create({}), folder, 1, folder / "runs")
        spec.code = code
        jobs.append(spec)
    return jobs


IGNORES_STOPS = (  # a job stuck where no stop signal reaches (ignored here: the worst case)
    "import signal, time\n"
    "for s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\n"
    "print('ready', flush=True); time.sleep(120)"
)
STOPS_ON_SIGINT = (  # the launcher starts jobs with stop signals held back, as the real entry
    "import signal, time\nsignal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])\n"
    "print('ready', flush=True)\ntry: time.sleep(120)\nexcept KeyboardInterrupt: pass"
)


@pytest.mark.serial  # signals its own process; a stop latency
def test_stop_signals_escalate_to_sigkill_and_a_stopped_job_is_continued(tmp_path, monkeypatch):
    """First Ctrl-C: forwarded (a SIGSTOPped job is continued first, and stops); second:
    SIGTERM; then SIGKILL after the timeout. The sweep ends, naming the jobs it killed."""
    monkeypatch.setattr(runner_module, "KILL_AFTER_S", 1.0)
    jobs = _fake_jobs(tmp_path, IGNORES_STOPS, STOPS_ON_SIGINT)
    runner = SweepRunner(jobs, SlotPool(1, 2, [0]), [], lambda lease: {}, *(lambda *_: None,) * 3)
    pids: list[int] = []

    def signals() -> None:
        while len([s for s in runner.states if s.proc is not None]) < 2:
            time.sleep(0.05)
        for s in runner.states:
            while not s.tail:  # each has its handlers in place
                time.sleep(0.05)
            pids.append(s.proc.pid)
        os.kill(runner.states[1].proc.pid, signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=signals, daemon=True).start()
    start = time.monotonic()
    states = runner.run()
    assert time.monotonic() - start < budget(30)
    assert runner.stop_signal == signal.SIGINT and runner.signals == 2
    assert status(states[0]) == "killed" and states[0].exit_code == -signal.SIGKILL
    assert states[1].exit_code == 0 and not states[1].killed  # continued, then stopped itself
    time.sleep(0.2)
    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]


def test_the_job_entry_parses_its_options_and_says_its_cores(tmp_path):
    entry = [sys.executable, "-m", "isaacgymenvs_gmi.sweep_job"]
    missing = subprocess.run([*entry, "--", "task=Cartpole"], capture_output=True, text=True)
    assert missing.returncode == 2 and "--result" in missing.stderr
    bad = subprocess.run([*entry, "--result", "r", "--cores", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "expected core numbers" in bad.stderr


def test_hyperband_brackets_stop_the_worst_and_keep_the_best():
    """Optuna puts each job in one of 3 brackets by a hash that changes from process to
    process (``hash`` of a string); with 27 jobs one bracket holds 9 or more, whatever the
    hash, and there the worse jobs fall out of the top third."""
    settings = LauncherSettings(prune="hyperband", warmup_epochs=0, min_epochs=1)
    pruner = SweepPruner(settings, max_epochs=9)
    stopped = {}
    for job in range(27):  # one after another, each worse than the one before it
        pruner.started(job)
        value = 100.0 - job
        for epoch in range(1, 10):
            if verdict := pruner.report(job, epoch, value * epoch):
                stopped[job] = verdict
                break
        pruner.finished(job, None if job in stopped else value * 9, pruned=job in stopped)
    assert 0 not in stopped and stopped, stopped  # the best never stops; some others do
    assert all(v.why.startswith("hyperband: not in the top 1/3") for v in stopped.values())
