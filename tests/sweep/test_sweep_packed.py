"""``python train.py -m ... hydra/launcher=gmi``: real multiruns of Cartpole on this machine's
cores, two jobs at a time, with Hydra's basic sweeper and with Optuna's."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests import warm_start
from tests.helpers import assert_ok, finished
from tests.speed import budget

pytestmark = pytest.mark.serial  # a sweep's slots and their timing

ROOT = Path(__file__).resolve().parents[2]
SMALL = (  # a few seconds a job
    "task=Cartpole",
    "num_envs=64",
    "train.params.config.minibatch_size=512",
    "hydra/launcher=gmi",
)


def sweep(
    tmp_path: Path, *args: str, per_gpu: int = 2, timeout: float = 240
) -> subprocess.CompletedProcess:
    """A finished packed sweep, ``per_gpu`` jobs at a time, in ``<tmp_path>/sw``."""
    argv = [sys.executable, "train.py", "-m", *SMALL, f"hydra.launcher.per_gpu={per_gpu}", *args]
    return finished([*argv, f"hydra.sweep.dir={tmp_path / 'sw'}"], ROOT, os.environ, timeout)


def summary(tmp_path: Path) -> list[dict]:
    return json.loads((tmp_path / "sw" / "summary.json").read_text())


def most_alive_at_once(rows: list[dict]) -> int:
    """Jobs alive together at the busiest moment, from their start and end times."""
    events = sorted(
        [(r["started"], 1) for r in rows if r["started"]]
        + [(r["ended"], -1) for r in rows if r["ended"]]
    )
    alive = peak = 0
    for _, change in events:
        alive += change
        peak = max(peak, alive)
    return peak


def test_a_seed_sweep_runs_two_at_a_time_and_every_checkpoint_plays(tmp_path):
    proc = sweep(tmp_path, "seed=1,2,3,4", "max_iterations=4")
    assert_ok(proc)
    rows = summary(tmp_path)
    assert sorted(r["job"] for r in rows) == [0, 1, 2, 3]
    assert all(r["status"] == "done" for r in rows), rows
    assert most_alive_at_once(rows) == 2
    for job in range(4):  # each job in its own folder, with its own run folder
        folder = tmp_path / "sw" / str(job)
        result = json.loads((folder / "result.json").read_text())
        assert result["frames"] == 4 * 64 * 16 and result["ended_by"] == "max_epochs"
        assert Path(result["checkpoint"]).is_relative_to(folder / "runs")
        assert list((folder / "runs").glob("*/summaries/events*"))
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    objectives = [r["objective"] for r in rows]
    assert objectives == sorted(objectives, reverse=True)
    assert "seed" in (tmp_path / "sw" / "summary.csv").read_text().splitlines()[1]
    assert proc.stderr.count("sweep: job ") >= 8  # a line per start and per end
    # the four checkpoints play, as a packed sweep of their own (all four at once)
    checkpoints = ",".join(r["checkpoint"] for r in sorted(rows, key=lambda r: r["job"]))
    played = sweep(tmp_path / "play", "test=True", f"checkpoint={checkpoints}", per_gpu=4)
    assert_ok(played)
    assert [r["status"] for r in summary(tmp_path / "play")] == ["done"] * 4


def test_a_two_gmi_job_waits_for_two_slots_and_every_job_runs_on_its_slots_cores(tmp_path):
    proc = sweep(tmp_path, "gmi.per_gpu=1,2", "max_iterations=3")
    assert_ok(proc)
    rows = {r["job"]: r for r in summary(tmp_path)}
    assert [rows[j]["status"] for j in (0, 1)] == ["done", "done"], rows
    assert rows[1]["started"] >= rows[0]["ended"]  # two slots free only once job 0 ended
    for j in (0, 1):
        slot = re.search(rf"job {j} \(.*\) started on .* cores (\[[\d, ]*\])", proc.stderr)
        log = (tmp_path / "sw" / str(j) / "job.log").read_text()
        assert slot and f"sweep job: bound to cores {slot.group(1)}" in log, log[:500]
    two = (tmp_path / "sw" / "1" / "job.log").read_text()
    assert "[GMI x2] epoch 3/3" in two
    assert re.findall(r"GMI (\d) pools: .* on cores \[(\d)\]", two) == [("0", "0"), ("1", "1")]


def test_pruning_stops_the_jobs_that_cannot_learn_and_gives_their_slots_on(tmp_path):
    """Median pruning over a learning-rate list (a fixed rate: rl-games' adaptive schedule
    would raise 1e-7 to a good rate within an epoch). The first two jobs run together, so
    neither can be judged; the next two at 1e-7 are stopped early with a checkpoint, below the
    median of the finished ones; the last starts in a slot a pruned job freed, before a full
    job's time has passed, and, as good as the first, runs to the end."""
    proc = sweep(
        tmp_path,
        "train.params.config.learning_rate=3e-3,1e-7,1e-7,1e-7,3e-3",
        "train.params.config.lr_schedule=identity",
        "max_iterations=30",
        "hydra.launcher.prune=median",
        "hydra.launcher.warmup_epochs=10",
        "hydra.launcher.startup_jobs=2",
    )
    assert_ok(proc)
    rows = {r["job"]: r for r in summary(tmp_path)}
    assert [rows[j]["status"] for j in range(5)] == ["done", "done", "pruned", "pruned", "done"]
    for j in (2, 3):
        row = rows[j]
        epoch = int(
            re.match(r"pruned at epoch (\d+) \(median of \d finished jobs", row["pruned"])[1]
        )
        assert 10 < epoch < 30 and Path(row["checkpoint"]).is_file()
        assert row["objective"] == row["best_reward"]  # what it reached, for the sweeper
        assert f"job {j} (train.params.config.learning_rate=1e-07) pruned at epoch" in proc.stderr
    full = rows[0]["ended"] - rows[0]["started"]
    assert rows[4]["started"] >= min(rows[2]["ended"], rows[3]["ended"])
    assert rows[4]["started"] - rows[2]["started"] < full
    assert most_alive_at_once(list(rows.values())) == 2


def test_an_optuna_study_records_every_trial_with_the_returned_reward(tmp_path):
    """One batch of 4 trials on 2 slots: a freed slot takes the batch's next trial; with the
    launcher's pruner on, a pruned trial's value is what it reached."""
    optuna = pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    proc = sweep(
        tmp_path,
        "hydra/sweeper=optuna",
        "hydra.sweeper.n_trials=4",
        "hydra.sweeper.n_jobs=4",
        "hydra.sweeper.direction=maximize",
        "hydra.sweeper.sampler.seed=1",
        "hydra.sweeper.study_name=lr",
        f"hydra.sweeper.storage={storage}",
        "train.params.config.learning_rate=tag(log, interval(1e-4, 1e-2))",
        "max_iterations=3",
        "hydra.launcher.prune=median",
        "hydra.launcher.warmup_epochs=1",
    )
    assert_ok(proc)
    trials = optuna.load_study(study_name="lr", storage=storage).trials
    assert [t.state.name for t in trials] == ["COMPLETE"] * 4
    rows = {r["job"]: r for r in summary(tmp_path)}
    assert sorted(t.value for t in trials) == sorted(r["objective"] for r in rows.values())
    assert most_alive_at_once(list(rows.values())) == 2


class BackgroundSweep:
    """A sweep started in the background; every process it starts is remembered."""

    def __init__(self, tmp_path: Path, *args: str):
        self.folder = tmp_path / "sw"
        self.proc = warm_start.start(
            [sys.executable, "train.py", "-m", *SMALL, "hydra.launcher.per_gpu=2", *args]
            + [f"hydra.sweep.dir={self.folder}"],
            ROOT,
            os.environ,
        )
        self.seen: set[int] = set()

    def job_pid(self, job: int, epochs: int, timeout: float) -> int:
        """The pid of job ``job`` once its log shows ``epochs`` epochs."""
        deadline = time.monotonic() + budget(timeout)
        log = self.folder / str(job) / "job.log"
        while time.monotonic() < deadline:
            self.remember()
            if log.exists() and f"epoch {epochs}/" in log.read_text():
                for pid in list(self.seen):
                    try:
                        command = " ".join(psutil.Process(pid).cmdline())
                    except psutil.Error:
                        continue
                    if str(log.parent / "result.json") in command:
                        return pid
            time.sleep(0.2)
        raise AssertionError(f"job {job} showed no epoch {epochs}")

    def remember(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            self.seen.update(c.pid for c in psutil.Process(self.proc.pid).children(True))

    def finish(self, timeout: float) -> tuple[int, str]:
        _, err = self.proc.communicate(timeout=budget(timeout))
        return self.proc.returncode, err

    def leftovers(self) -> list[int]:
        time.sleep(0.5)
        return [
            p
            for p in self.seen
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]


def test_a_job_killed_with_sigkill_does_not_stop_the_others(tmp_path):
    run = BackgroundSweep(tmp_path, "seed=1,2,3,4", "max_iterations=12")
    os.kill(run.job_pid(1, epochs=2, timeout=90), signal.SIGKILL)
    code, err = run.finish(timeout=240)
    assert code == 1, err[-3000:]  # Hydra's sweeper reports the failed job
    rows = {r["job"]: r for r in summary(tmp_path)}
    assert rows[1]["status"] == "failed" and rows[1]["error"] == "killed by SIGKILL"
    assert [rows[j]["status"] for j in (0, 2, 3)] == ["done"] * 3
    assert "job 1 (seed=2): killed by SIGKILL" in err and "Traceback" not in err
    assert run.leftovers() == []


def test_ctrl_c_stops_every_running_job_with_a_checkpoint(tmp_path):
    """Job 1 is stopped (SIGSTOP) when Ctrl-C comes: the sweep continues it first."""
    run = BackgroundSweep(tmp_path, "seed=1,2,3,4", "max_iterations=500")
    run.job_pid(0, epochs=2, timeout=90)
    os.kill(run.job_pid(1, epochs=2, timeout=90), signal.SIGSTOP)
    run.proc.send_signal(signal.SIGINT)
    code, err = run.finish(timeout=120)
    assert code == 130, err[-3000:]
    assert "Traceback" not in err
    rows = {r["job"]: r for r in summary(tmp_path)}
    assert [rows[j]["status"] for j in (0, 1)] == ["stopped"] * 2
    assert all(Path(rows[j]["checkpoint"]).is_file() for j in (0, 1))
    assert [rows[j]["status"] for j in (2, 3)] == ["not started"] * 2
    assert run.leftovers() == []


@pytest.mark.parametrize(
    ("args", "refusal"),
    [
        (("seed=1,abc",), "error: job 1 (seed=abc): seed='abc': must be an integer"),
        (("seed=1,2", "hydra.launcher.objective=worst"), "error: hydra.launcher.objective="),
        (("seedx=1,2",), "Could not override 'seedx'"),  # Hydra's own check, before ours
    ],
)
def test_refused_before_any_job_starts_naming_the_key(tmp_path, args, refusal):
    """One run per refusal path (the launcher's settings, a job's own config, Hydra's check of
    a swept key); the device limits are tested in process (test_sweep_parts.py)."""
    proc = sweep(tmp_path, *args, "max_iterations=2", timeout=120)
    assert proc.returncode in (1, 2) and refusal in proc.stderr, proc.stderr[-3000:]
    assert not list((tmp_path / "sw").glob("[0-9]*")), "a job folder was made"
