"""GMIs on a real GPU: MPS daemon life cycle, MPS and direct GMIs training, NVML inventory.

Marked ``gpu``: skipped on machines without CUDA (CI); run them where a GPU is lent.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from isaacgymenvs_gmi.gmi.mps import daemon_running, mps_daemon
from isaacgymenvs_gmi.placement.inventory import detect_inventory
from tests.gmi.test_gmi_runtime import progress
from tests.helpers import assert_ok
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.gpu


def test_nvml_inventory_sees_the_gpu():
    inv = detect_inventory()
    assert inv.gpus and inv.gpus[0].memory_bytes > 0 and inv.gpus[0].compute_capability >= (7, 0)


def test_mps_daemon_we_start_is_stopped(monkeypatch):
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/nonexistent-gmi-test")
    with mps_daemon() as pipe_dir:
        assert daemon_running(pipe_dir)
        assert oct(os.stat(pipe_dir).st_mode & 0o777) == "0o700"
    assert not daemon_running(pipe_dir)


def test_mps_daemon_of_a_killed_owner_is_stopped(monkeypatch):
    """SIGKILL runs no ``finally``: the owner's watcher stops the real daemon (seen leaking on an
    H100 before the watcher existed, after a benchmark was killed by its time limit)."""
    import signal
    import time

    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", "/nonexistent-gmi-test")
    code = (
        "import time; from isaacgymenvs_gmi.gmi.mps import mps_daemon\n"
        "with mps_daemon() as d:\n    print(d, flush=True); time.sleep(600)"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pipe_dir = owner.stdout.readline().strip()
    assert daemon_running(pipe_dir)
    owner.send_signal(signal.SIGKILL)
    owner.wait(timeout=budget(30))
    deadline = time.monotonic() + budget(30)
    while daemon_running(pipe_dir) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not daemon_running(pipe_dir) and not os.path.exists(pipe_dir)


def train(tmp_path: Path, *overrides: str, task: str = "Cartpole") -> subprocess.CompletedProcess:
    """``train.py task=<task> sim_backend=mjx ...overrides`` run to its end; its output is also
    kept in ``tmp_path/train.log`` (read it from a kept ``--basetemp`` after a failure)."""
    proc = subprocess.run(
        [
            sys.executable,
            "train.py",
            f"task={task}",
            "sim_backend=mjx",
            *overrides,
            f"train_dir={tmp_path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(900),
    )
    (tmp_path / "train.log").write_text(proc.stdout + "\n--- stderr ---\n" + proc.stderr)
    return proc


def test_three_mps_gmis_train_ant_finite_with_a_rising_reward(tmp_path):
    """The case that went NaN from epoch 1 on an H200 and an H100: 3 MPS GMIs x 1366 envs, Ant
    on MJX with AntPPO's own settings (mixed precision: bf16 autocast; torch.compile). The learner
    check stops a run at the first epoch with NaN or inf in its weights, losses or reward, so exit
    0 means 20 finite epochs. Every GMI names the cuBLAS it loaded (the NaN's cause)."""
    proc = train(
        tmp_path,
        "gmi.per_gpu=3",
        "gmi.backend=mps",
        "num_envs=1366",
        "train.params.config.minibatch_size=10928",
        "max_iterations=20",
        task="Ant",
    )
    assert_ok(proc)
    assert "[GMI x3] epoch 20/20 " in proc.stdout and "non-finite" not in proc.stderr
    identities = [ln for ln in proc.stdout.splitlines() if " GPU libraries: libcublas" in ln]
    assert len(identities) == 3, proc.stdout[-3000:]  # every GMI says what it runs on
    rows = progress(proc.stdout)  # epochs before the first finished episode show no reward
    rewards = [r for g, _, r in rows if g == 3]
    assert len(rewards) >= 12 and all(math.isfinite(r) for r in rewards), rewards
    # one process at 4096 envs went from ~10 (epochs 3-5) to ~60 (epochs 18-20) on an H200
    assert sum(rewards[-3:]) / 3 > sum(rewards[:3]) / 3 + 10.0, rewards


@pytest.mark.parametrize("backend", ["mps", "direct"])
def test_two_gmis_train_on_one_gpu(tmp_path, backend):
    proc = train(tmp_path, "gmi.per_gpu=2", f"gmi.backend={backend}", "max_iterations=20")
    assert_ok(proc)
    assert f"backend {backend}" in proc.stdout and "[GMI x2]" in proc.stdout
    if backend == "mps":
        assert "50% of SMs" in proc.stdout


@pytest.mark.parametrize(("transport", "routes"), [("auto", "2 CUDA IPC"), ("shm", None)])
def test_async_on_one_gpu_over_cuda_ipc_and_host_staging(tmp_path, transport, routes):
    """1 trainer + 2 actors under MPS: by default each route's data lives in device memory the
    actors open by CUDA IPC; ``shm`` stages it through host memory. Both learn and balance."""
    proc = train(
        tmp_path,
        "gmi.per_gpu=3",
        "gmi.backend=mps",
        "gmi.mode=async",
        f"gmi.async.transport={transport}",
        "max_iterations=40",
    )
    assert_ok(proc)
    ready = next(line for line in proc.stdout.splitlines() if "trainer ready" in line)
    assert (routes in ready) if routes else ("CUDA IPC" not in ready), ready
    assert "produced" in proc.stdout and "NaN" not in proc.stdout


def test_serving_on_three_mps_gmis(tmp_path):
    proc = train(
        tmp_path,
        "gmi.per_gpu=3",
        "gmi.backend=mps",
        "gmi.mode=serve",
        "serve.steps=200",
        f"serve.record={tmp_path / 'rec'}",
    )
    assert_ok(proc)
    assert "PPS" in proc.stdout and (tmp_path / "rec" / "manifest.json").exists()
