"""The GMI runtime for real: processes, core sets, lockstep PPO, faults, torchrun."""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from isaacgymenvs_gmi.comm.signed_store import SECRET_ENV
from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint
from tests.helpers import PROGRESS, assert_ok, free_port, run_train
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[2]
TARGET = 400.0


def train(*args: str, tmp_path: Path, timeout: int = 400, env: dict | None = None):
    return run_train(*args, f"train_dir={tmp_path / 'runs'}", env=env, timeout_s=timeout)


def progress(stdout: str) -> list[tuple[int, int, float]]:
    """(GMIs, epoch, mean reward) of every progress line GMI 0 printed with a reward."""
    return [(int(g), int(e), float(r)) for g, e, r in PROGRESS.findall(stdout) if r != "-"]


def gmi_lines(stdout: str) -> dict[int, str]:
    return {int(m.group(1)): m.group(0) for m in re.finditer(r"^GMI (\d+): .*$", stdout, re.M)}


def checkpoints(tmp_path: Path) -> list[str]:
    return sorted(glob.glob(str(tmp_path / "runs" / "*" / "nn" / "*.pth")), key=os.path.getmtime)


# a run that reaches the target ends there (rl-games judges it on a new best reward)
TO_TARGET = (f"train.params.config.score_to_win={TARGET}", "train.params.config.save_best_after=1")


def test_three_gmis_reach_the_single_gmi_threshold(tmp_path):
    """Within the config's 100 epochs (it took 39 here)."""
    proc = train("task=Cartpole", "gmi.per_gpu=3", *TO_TARGET, tmp_path=tmp_path)
    assert_ok(proc)
    rows = progress(proc.stdout)
    assert rows and all(g == 3 for g, _, _ in rows)
    assert max(r for _, _, r in rows) >= TARGET, rows[-5:]
    assert "training done: score_to_win reached" in proc.stderr, proc.stderr[-2000:]
    assert len(gmi_lines(proc.stdout)) == 3
    assert "Algorithm 1 picks mpr" in proc.stdout  # one GPU
    assert re.search(r"gradient reduction for [\d,]+ values: (mpr|har) \(measured: ", proc.stdout)
    # only GMI 0 writes into the user's run folder
    assert len(glob.glob(str(tmp_path / "runs" / "*"))) == 1
    assert len(glob.glob(str(tmp_path / "runs" / "*" / "summaries" / "events*"))) == 1


def test_each_gmi_owns_its_cores_and_pools_match(tmp_path):
    proc = train(
        "task=Cartpole", "gmi.num_gpus=2", "gmi.per_gpu=1", "max_iterations=3", tmp_path=tmp_path
    )
    assert_ok(proc)
    lines = gmi_lines(proc.stdout)
    cores = {g: re.search(r"cores (\[[\d, ]+\])", line).group(1) for g, line in lines.items()}
    assert cores == {0: "[0]", 1: "[1]"}, lines
    assert "Algorithm 1 picks mrr" in proc.stdout  # 1 GMI on each of 2 devices
    pools = re.findall(r"GMI (\d) pools: (\{.*\}) on cores (\[.*\])", proc.stdout)
    assert sorted(p[0] for p in pools) == ["0", "1"]
    for _, found, _ in pools:
        assert eval(found) == {"torch": 1, "xla": 1, "mujoco": 1}  # noqa: S307 - our own output


def _gmi_pids(launcher: psutil.Process) -> list[int]:
    gmis = {p.name(): p.pid for p in launcher.children() if p.name().startswith("gmi-")}
    return [gmis[name] for name in sorted(gmis, key=lambda n: int(n[4:]))]


@pytest.mark.serial  # a detection window
def test_kill_9_one_gmi_stops_all_and_leaves_a_loadable_checkpoint(tmp_path):
    args = [
        sys.executable,
        "train.py",
        "task=Cartpole",
        "gmi.per_gpu=2",
        "max_iterations=100000",
        "train.params.config.save_frequency=2",
        f"train_dir={tmp_path / 'runs'}",
    ]
    launcher = subprocess.Popen(
        args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.time() + 240
        while not checkpoints(tmp_path) and time.time() < deadline:
            time.sleep(1)
        assert checkpoints(tmp_path), "no checkpoint written"
        pids = _gmi_pids(psutil.Process(launcher.pid))
        assert len(pids) == 2
        os.kill(pids[1], signal.SIGKILL)
        killed_at = time.time()
        _, stderr = launcher.communicate(timeout=budget(90))
        assert time.time() - killed_at < budget(60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert launcher.returncode != 0
    last = stderr.strip().splitlines()[-1]  # the cause first, however low the others' rank
    assert re.match(r"error: GMI 1 \(pid \d+\) killed by SIGKILL", last), stderr[-2000:]
    time.sleep(1)
    survivors = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
    assert not survivors
    state = read_checkpoint(checkpoints(tmp_path)[-1])
    assert state["epoch"] >= 2 and "model" in state


@pytest.mark.serial  # a detection window
def test_a_hung_gmi_is_named_and_everyone_exits(tmp_path):
    start = time.time()
    proc = train(
        "task=Cartpole",
        "gmi.per_gpu=2",
        "gmi.timeout_s=10",
        tmp_path=tmp_path,
        env={"ISAACGYMENVS_GMI_FAULT": "1:hang:3"},
    )
    assert proc.returncode != 0
    assert time.time() - start < budget(120)
    assert re.search(r"missing: GMI 1 \(stuck after collective #\d+", proc.stderr), proc.stderr[
        -3000:
    ]


def test_resume_with_a_different_number_of_gmis(tmp_path):
    first = train(
        "task=Cartpole",
        "max_iterations=6",
        "train.params.config.save_frequency=3",
        "train.params.config.save_best_after=1",  # a best reward (a numpy scalar in rl-games)
        tmp_path=tmp_path,
    )
    assert_ok(first)
    ckpt = checkpoints(tmp_path)[-1]
    state = torch.load(ckpt)  # torch's defaults (weights_only=True), as any pipeline loads it
    assert state["epoch"] == 6 and isinstance(state["last_mean_rewards"], float)
    second = train(
        "task=Cartpole",
        "gmi.per_gpu=2",
        "max_iterations=9",
        f"checkpoint={ckpt}",
        tmp_path=tmp_path,
    )
    assert_ok(second)
    epochs = [e for _, e, _ in progress(second.stdout)]
    assert epochs and epochs[0] == 7 and epochs[-1] == 9  # continued from epoch 6


@pytest.mark.slow
def test_torchrun_two_nodes_of_two_gmis_train_cartpole(tmp_path):
    port = free_port()
    common = [
        "--nnodes=2",
        "--nproc_per_node=2",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint=127.0.0.1:{port}",
        "--rdzv_id=gmi-test",
        "train.py",
        "task=Cartpole",
        "max_iterations=40",  # a budget: it ends at the bar (epoch 14 of 40 here)
        "train.params.config.score_to_win=100",
        "train.params.config.save_best_after=1",
        f"train_dir={tmp_path / 'runs'}",
    ]
    torchrun = [sys.executable, "-m", "torch.distributed.run"]
    temp = tmp_path / "temp"  # torchrun's own log folders land here, not in the shared temp dir
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), SECRET_ENV: "5e" * 16}  # signed store keys
    nodes = [
        subprocess.Popen(
            torchrun + common,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    outs = [n.communicate(timeout=budget(400)) for n in nodes]
    assert all(n.returncode == 0 for n in nodes), [o[1][-2000:] for o in outs]
    rows = progress(outs[0][0] + outs[1][0])
    assert rows and all(g == 4 for g, _, _ in rows)
    assert rows[-1][2] >= 100 > rows[0][2] + 50  # it learns, to the bar
    assert "training done: score_to_win reached" in outs[0][1] + outs[1][1]
    lines = gmi_lines(outs[0][0] + outs[1][0])
    assert sorted(lines) == [0, 1, 2, 3] and "node 1" in lines[3]
