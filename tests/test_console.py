"""The console a user sees: their run's lines, none of the libraries' set-up chatter, warnings
once per run; the same progress line (elapsed time, ETA) at 1 GMI as at N, labelled replica
fingerprints, one closing line, the launcher's lines once under torchrun; and playing a
checkpoint with fewer envs than it was trained with."""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from isaacgymenvs_gmi.console import (
    FilteredStdout,
    clock,
    closing_line,
    keeps,
    progress_bar,
    quiet_console,
)
from isaacgymenvs_gmi.gmi.group import GmiGroup, fingerprint
from isaacgymenvs_gmi.runners.result import RunResult
from isaacgymenvs_gmi.runners.sync_ppo.telemetry import EpochTelemetry, gather_one
from tests.helpers import assert_ok, run_train

ROOT = Path(__file__).resolve().parents[1]
HYDRA_DISABLED_LOGGING = (  # hydra/job_logging=disabled, which cfg/config.yaml picks as upstream
    Path(__import__("hydra").__file__).parent / "conf" / "hydra" / "job_logging" / "disabled.yaml"
)

# what a new user saw on `make train` before the filter (one of each, verbatim)
NOISE_LINES = [
    "self.seed = 42",
    "Started to train",
    "Started to play",
    "WARNING: seq_len is deprecated, use seq_length instead",
    "seq_length: 4",
    "current training device: cpu",
    "build mlp: 4",
    "RunningMeanStd:  (4,)",
    "torch.compile: Disabled",
    "MAX EPOCHS NUM!",
    "[BasePlayer] Creating regular env:  rlgpu",
    "410.5208930969238",
    "av reward: 25.65755581855774 av steps: 62.1875",
]
NOISE_IN_OUTPUT = re.compile(
    r"self\.seed|Started to|seq_len is deprecated|build mlp|MAX EPOCHS NUM|RunningMeanStd"
    r"|torch\.compile|current training device|Unable to initialize backend|version_base"
    r"|fps step|\[isaacgymenvs_gmi\.rl\.observer\]|OpenGL"
)
# the progress line, at 1 GMI as at N (per-GMI rates in brackets from 2 GMIs on)
PROGRESS = re.compile(
    r"^\[GMI x(\d+)\] epoch (\d+)/(\d+) frames ([\d,]+) \| [\d,]+ env steps/s( \([\d.k ]+\))? "
    r"\| mean reward (-|-?[\d.]+) \| elapsed \d+:\d\d, ETA \d+:\d\d$",
    re.M,
)
CLOSING = re.compile(
    r"^training done: max_epochs reached after ([\d,]+) frames in [\d.]+ s; "
    r"final checkpoint: (\S+\.pth)$"
)


@pytest.mark.parametrize("line", NOISE_LINES)
def test_library_chatter_is_dropped_on_every_gmi(line):
    assert not keeps(line, 0) and not keeps(line, 3)


@pytest.mark.parametrize(
    "line",
    [
        "[GMI x2] epoch 1/2 frames 16,384 | 79,399 env steps/s | mean reward 0.8",
        "reward: 16.41 steps: 53.0",
        "mean episode reward: 25.658, mean episode length: 62.2",
        "=> saving checkpoint 'runs/Ant/nn/Ant.pth'",
        "",
        "build mlp: layers of my own network",  # not rl-games' line: kept
    ],
)
def test_lines_of_the_run_pass(line):
    assert keeps(line, 0) and keeps(line, 2)


def test_a_library_warning_is_said_once_per_run_by_gmi_0():
    line = "WARNING: Max epochs reached before any env terminated at least once"
    assert keeps(line, 0) and not keeps(line, 1)


def test_whole_lines_leave_in_one_write_and_partial_lines_wait(tmp_path):
    target = open(tmp_path / "out", "w")  # noqa: SIM115 - closed below
    stream = FilteredStdout(target, rank=0)
    print("self.seed", "=", 42, file=stream)  # print writes its pieces one by one
    stream.write("kept line\nbuild mlp: 4\nhalf a ")
    assert (tmp_path / "out").read_text() == "kept line\n"
    stream.write("line\n")
    stream.write("no newline yet")
    stream.release()
    target.close()
    assert (tmp_path / "out").read_text() == "kept line\nhalf a line\nno newline yet"


def test_quiet_console_restores_stdout_and_leaves_captured_streams_alone(monkeypatch):
    captured = io.StringIO()  # no file descriptor: a test's captured stdout
    monkeypatch.setattr(sys, "stdout", captured)
    with quiet_console(0):
        assert sys.stdout is captured
        print("self.seed = 42")
    assert "self.seed" in captured.getvalue()


# --- what a run says about itself ---------------------------------------------------------------
def _result(**kw) -> RunResult:
    return RunResult(**{"mean_reward": 1.0, "mean_length": 9.0, "experiment_dir": "runs/x", **kw})


def test_the_closing_line_says_why_frames_wall_time_and_final_checkpoint():
    last = "runs/x/nn/last_Cartpole_ep_7.pth"
    stopped = _result(frames=3072, stopped_by=signal.SIGINT, checkpoint=last)
    assert closing_line(stopped, 12.34) == (
        f"stopped by SIGINT after 3,072 frames in 12.3 s; final checkpoint: {last}"
    )
    done = _result(frames=6144, ended_by="max_frames", checkpoint=last)
    assert closing_line(done, 3725.0) == (
        f"training done: max_frames reached after 6,144 frames in 1:02:05; final checkpoint: {last}"
    )
    assert closing_line(_result(frames=8), 1.0) == (
        "training done after 8 frames in 1.0 s; final checkpoint: none written"
    )
    served = _result(frames=500, experiment_dir=None)  # no run folder: nothing to name
    assert closing_line(served, 2.0) == "done after 500 frames in 2.0 s"


@pytest.mark.parametrize(("seconds", "text"), [(0.4, "0:00"), (65.2, "1:05"), (3725, "1:02:05")])
def test_clock(seconds, text):
    assert clock(seconds) == text


def test_progress_bar():
    assert progress_bar(0.25) == "[#####...............]  25%"
    assert progress_bar(1.5, width=4) == "[####] 100%"


def _telemetry(times: list[float], stream=None, gather=gather_one) -> EpochTelemetry:
    """Telemetry of GMI 0 (64 envs x 16 steps per epoch), its clock reading ``times``."""
    return EpochTelemetry(
        64, 16, 0, gather, stream=stream or io.StringIO(), clock=iter(times).__next__
    )


def test_one_gmi_shows_the_progress_line_with_elapsed_time_and_an_eta_from_the_epoch_pace():
    telemetry = _telemetry([0.0, 1.0, 3.0])
    telemetry.record(epoch=1, max_epochs=3, epoch_seconds=0.5, reward=None)
    telemetry.record(epoch=2, max_epochs=3, epoch_seconds=0.5, reward=2.04, frames=2048)
    assert telemetry.stream.getvalue().splitlines() == [
        # first epoch: 2 left at its own 0.5 s
        "[GMI x1] epoch 1/3 frames 1,024 | 2,048 env steps/s | mean reward - "
        "| elapsed 0:01, ETA 0:01",
        # then the wall time between epochs (2 s) sets the pace
        "[GMI x1] epoch 2/3 frames 2,048 | 2,048 env steps/s | mean reward 2.0 "
        "| elapsed 0:03, ETA 0:02",
    ]
    assert all(PROGRESS.match(line) for line in telemetry.stream.getvalue().splitlines())


def test_the_eta_follows_max_frames_and_is_left_out_without_a_limit():
    telemetry = _telemetry([0.0, 2.0, 4.0])
    telemetry.record(epoch=1, max_epochs=-1, max_frames=10_000, epoch_seconds=2.0, reward=None)
    telemetry.record(epoch=2, max_epochs=-1, epoch_seconds=2.0, reward=None)
    first, second = telemetry.stream.getvalue().splitlines()
    assert first.startswith("[GMI x1] epoch 1 frames 1,024 |")
    assert first.endswith("| elapsed 0:02, ETA 0:18")  # 9 epochs of 1,024 frames at 2 s
    assert second.endswith("| mean reward - | elapsed 0:04")
    assert telemetry.history[0]["eta_s"] == 18.0 and telemetry.history[1]["eta_s"] is None


def test_on_a_terminal_the_line_is_rewritten_in_place_with_a_progress_bar(monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    master, replica = os.openpty()
    with open(replica, "w") as terminal:
        telemetry = _telemetry([0.0, 1.0, 2.0], stream=terminal)
        assert telemetry.live
        telemetry.record(epoch=1, max_epochs=4, epoch_seconds=1.0, reward=None)
        telemetry.record(epoch=2, max_epochs=4, epoch_seconds=1.0, reward=None)
        telemetry.close()
        shown = ""
        while not shown.endswith("\n"):  # a terminal hands over what it has so far
            shown += os.read(master, 4096).decode()
    os.close(master)
    first, second, end = shown.split("\r")[1:]  # the terminal turns the last "\n" into "\r\n"
    assert first.startswith("[GMI x1] [#####...............]  25% epoch 1/4 frames 1,024")
    assert second.startswith("[GMI x1] [##########..........]  50% epoch 2/4 frames 2,048")
    assert first.endswith("ETA 0:03\x1b[K") and end == "\n"


class _OneReplica(GmiGroup):
    """A group whose gather hands back ``others`` (or copies of this GMI's vector)."""

    def __init__(self, others=None):
        super().__init__(0, 2, guard=None, store=None, startup_timeout_s=1.0)
        self.others = others

    def all_gather_vector(self, x, what):
        return torch.stack([x, x if self.others is None else self.others])


class CentralValueTrain(torch.nn.Linear):
    """Named as rl-games' central value net (the asymmetric critic)."""


def test_fingerprints_are_labelled_per_module(capfd):
    model, critic, extra = torch.nn.Linear(2, 2), CentralValueTrain(2, 1), torch.nn.Linear(1, 1)
    _OneReplica().check_same([model], "initial weights")
    line = capfd.readouterr().out.strip()
    assert re.fullmatch(
        r"replicas identical at 'initial weights' on 2 GMIs: model=[0-9a-f]{32}", line
    )
    _OneReplica().check_same([model, critic, extra], "after 10 epochs")
    line = capfd.readouterr().out.strip()
    assert re.search(r": model=[0-9a-f]{32}, critic=[0-9a-f]{32}, module2=[0-9a-f]{32}$", line)


def test_a_diverged_replica_names_the_gmi_and_the_module():
    model, critic = torch.nn.Linear(2, 2), CentralValueTrain(2, 1)
    drifted = torch.stack([fingerprint(model), fingerprint(CentralValueTrain(2, 1))])
    with pytest.raises(RuntimeError, match=r"GMI 1 differs from GMI 0 in critic$"):
        _OneReplica(drifted).check_same([model, critic], "after 20 epochs")


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.seen: list[str] = []

    def emit(self, record):
        self.seen.append(f"{record.name}: {record.getMessage()}")


@pytest.fixture
def root_records():
    root, handler = logging.getLogger(), _Records()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield handler.seen
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_pipeline_that_imported_the_package_first_keeps_our_log_lines():
    """Hydra's ``disabled`` job logging turns off every logger that exists when a job starts;
    ours are turned back on, a library's stay as Hydra left them."""
    from hydra.core.utils import configure_log
    from omegaconf import OmegaConf

    from isaacgymenvs_gmi.cli import enable_our_loggers

    ours, theirs = logging.getLogger("isaacgymenvs_gmi.launch"), logging.getLogger("a_library")
    loggers = logging.Logger.manager.loggerDict.values()
    disabled = {x: x.disabled for x in loggers if isinstance(x, logging.Logger)}
    level = logging.root.level
    try:
        configure_log(OmegaConf.load(HYDRA_DISABLED_LOGGING))
        assert ours.disabled and theirs.disabled
        enable_our_loggers()
        assert not ours.disabled and theirs.disabled
    finally:
        logging.root.setLevel(level)
        for logger, was in disabled.items():
            logger.disabled = was
        theirs.disabled = False


def test_pyopengl_speedup_notice_is_dropped(root_records):
    with quiet_console(0):
        logging.getLogger("OpenGL.acceleratesupport").info(
            "No OpenGL_accelerate module loaded: No module named 'OpenGL_accelerate'"
        )
        logging.getLogger("isaacgymenvs_gmi.launch").info("ours")
    assert root_records == ["isaacgymenvs_gmi.launch: ours"]


@pytest.mark.parametrize("rank", ["0", "1"])
def test_under_torchrun_only_rank_0_logs_below_warning(root_records, monkeypatch, rank):
    monkeypatch.setenv("RANK", rank)
    with quiet_console():
        logging.getLogger("isaacgymenvs_gmi.launch").info("settings not used: pipeline")
        logging.getLogger("isaacgymenvs_gmi.gmi.worker").warning("store not authenticated")
    logging.getLogger("isaacgymenvs_gmi.launch").info("after the run")  # the filter is gone
    kept = [
        "isaacgymenvs_gmi.gmi.worker: store not authenticated",
        "isaacgymenvs_gmi.launch: after the run",
    ]
    assert (
        root_records
        == (["isaacgymenvs_gmi.launch: settings not used: pipeline"] if rank == "0" else []) + kept
    )


# --- real runs ----------------------------------------------------------------------------------
def _train(runs: Path, *args: str, launcher: tuple[str, ...] = (sys.executable,), **env: str):
    # PYTHONWARNINGS emptied: the output must be clean without the suite's warning filters
    return run_train(
        "task=Cartpole", *args, f"train_dir={runs}", env={"PYTHONWARNINGS": "", **env},
        launcher=launcher,
    )  # fmt: skip


TINY = ("num_envs=64", "train.params.config.minibatch_size=512", "max_iterations=3")


def test_one_gmi_prints_our_progress_line_and_one_closing_line(tmp_path):
    proc = _train(tmp_path, *TINY)
    assert_ok(proc)
    text = proc.stdout + proc.stderr
    assert not NOISE_IN_OUTPUT.search(text), NOISE_IN_OUTPUT.search(text)
    rows = PROGRESS.findall(proc.stdout)
    assert [(n, e, m, f) for n, e, m, f, *_ in rows] == [
        ("1", "1", "3", "1,024"),
        ("1", "2", "3", "2,048"),
        ("1", "3", "3", "3,072"),
    ], proc.stdout
    closing = CLOSING.match(proc.stderr.strip().splitlines()[-1])
    assert closing and closing.group(1) == "3,072", proc.stderr[-2000:]
    assert os.path.isfile(closing.group(2))
    assert len(re.findall(r"^training done", text, re.M)) == 1


def test_under_torchrun_the_launcher_speaks_once(tmp_path):
    torchrun = (sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2")
    temp = tmp_path / "temp"  # torchrun's own log folders land here, not in the shared temp dir
    temp.mkdir()
    proc = _train(
        tmp_path / "runs", *TINY[:2], "max_iterations=1", launcher=torchrun, TMPDIR=str(temp)
    )
    assert_ok(proc)
    text = proc.stdout + proc.stderr
    for once in ("Isaac Gym settings not used", "Cartpole: 64 envs per GMI", "training done"):
        assert text.count(once) == 1, (once, text[-3000:])
    assert len(PROGRESS.findall(proc.stdout)) == 1
    assert sorted(re.findall(r"^GMI (\d+): node ", proc.stdout, re.M)) == ["0", "1"]


@pytest.fixture(scope="module")
def two_gmi_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    runs = tmp_path_factory.mktemp("runs")
    proc = _train(runs, "gmi.per_gpu=2", "max_iterations=2", "experiment=console")
    assert_ok(proc)
    return proc, runs


def test_train_console_shows_the_run_and_nothing_else(two_gmi_run):
    proc, _ = two_gmi_run
    text = proc.stdout + proc.stderr
    assert not NOISE_IN_OUTPUT.search(text), NOISE_IN_OUTPUT.search(text)
    starts = re.findall(r"^GMI (\d+): node ", proc.stdout, re.M)
    assert sorted(starts) == ["0", "1"], proc.stdout  # exactly one start line per GMI
    rows = PROGRESS.findall(proc.stdout)  # the same line as at 1 GMI, per-GMI rates added
    assert [(n, e, m) for n, e, m, *_ in rows] == [("2", "1", "2"), ("2", "2", "2")], proc.stdout
    assert all(per for *_, per, _ in rows)
    fingerprints = re.findall(r"^replicas identical at '[^']+' on 2 GMIs: (.*)$", proc.stdout, re.M)
    labelled = r"model=[0-9a-f]{32}, optimizer=[0-9a-f]{32}"  # weights and optimizer state
    assert fingerprints and all(re.fullmatch(labelled, f) for f in fingerprints)
    closing = CLOSING.match(proc.stderr.strip().splitlines()[-1])
    assert closing and closing.group(1) == rows[-1][3], proc.stderr[-2000:]


def test_playing_with_fewer_envs_than_training(two_gmi_run):
    """Trained with 512 envs per GMI and a minibatch sized for them; playing 16 envs needs no
    minibatch at all and is not refused over one."""
    _, runs = two_gmi_run
    (checkpoint,) = runs.glob("console*/nn/last_*.pth")
    proc = run_train(
        "task=Cartpole", "test=True", f"checkpoint={checkpoint}", "num_envs=16", f"train_dir={runs}"
    )
    assert_ok(proc)
    assert "mean episode reward" in proc.stdout
    assert not NOISE_IN_OUTPUT.search(proc.stdout + proc.stderr)
