"""The console a user sees: their run's lines, none of the libraries' set-up chatter, warnings
once per run; and playing a checkpoint with fewer envs than it was trained with."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from isaacgymenvs_gmi.console import FilteredStdout, keeps, quiet_console
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[1]

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


@pytest.fixture(scope="module")
def two_gmi_run(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    runs = tmp_path_factory.mktemp("runs")
    proc = subprocess.run(
        [sys.executable, "train.py", "task=Cartpole", "gmi.per_gpu=2", "max_iterations=2"]
        + [f"train_dir={runs}", "experiment=console"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(300),
        env={k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc, runs


def test_train_console_shows_the_run_and_nothing_else(two_gmi_run):
    proc, _ = two_gmi_run
    text = proc.stdout + proc.stderr
    assert not NOISE_IN_OUTPUT.search(text), NOISE_IN_OUTPUT.search(text)
    starts = re.findall(r"^GMI (\d+): node ", proc.stdout, re.M)
    assert sorted(starts) == ["0", "1"], proc.stdout  # exactly one start line per GMI
    assert len(re.findall(r"^\[GMI x2\] epoch \d+/2 ", proc.stdout, re.M)) == 2


def test_playing_with_fewer_envs_than_training(two_gmi_run):
    """Trained with 512 envs per GMI and a minibatch sized for them; playing 16 envs needs no
    minibatch at all and is not refused over one."""
    _, runs = two_gmi_run
    (checkpoint,) = runs.glob("console*/nn/last_*.pth")
    proc = subprocess.run(
        [sys.executable, "train.py", "task=Cartpole", "test=True", f"checkpoint={checkpoint}"]
        + ["num_envs=16", f"train_dir={runs}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(300),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "mean episode reward" in proc.stdout
    assert not NOISE_IN_OUTPUT.search(proc.stdout + proc.stderr)
