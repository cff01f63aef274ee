"""A run is safe by default: loopback-only sockets, a rendezvous strangers cannot reach, graceful
stop on SIGINT/SIGTERM, stopped GMIs cleared in time, nothing left behind (real runs)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import psutil
import pytest
import torch
import torch.distributed as dist

from isaacgymenvs_gmi import launch
from isaacgymenvs_gmi.comm.signed_store import SignedStore, StoreAuthError
from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint
from tests.gmi.launched_run import LaunchedRun
from tests.gmi.stranger import probe_as_stranger
from tests.helpers import fingerprints
from tests.speed import budget

pytestmark = pytest.mark.serial  # stop latencies, detection windows, /dev/shm

LOOPBACK = {"127.0.0.1", "::1"}


def listening(pids: list[int]) -> list[tuple[int, str, int]]:
    """(pid, address, port) of every listening TCP socket of ``pids``."""
    out = []
    for pid in pids:
        for c in psutil.Process(pid).connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN:
                out.append((pid, c.laddr.ip, c.laddr.port))
    return out


@pytest.fixture
def shared_temp():
    """A temp dir like ``/tmp``: world-writable and sticky, reachable by every user."""
    folder = Path(tempfile.mkdtemp(prefix="shared-temp-"))
    folder.chmod(0o1777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_stranger_finds_no_rendezvous_and_the_run_is_unaffected(tmp_path, shared_temp):
    """Another local user (``nobody``, when the tests run as root) who knows the run's pids,
    its temp dir and the loopback ports it listens on finds no store to write, cannot open the
    run's folder or read its environment, and garbage sent to gloo's sockets changes nothing:
    the run learns bit for bit as one nobody probed. Also: GMIs forked from the launcher (the
    default here) learn exactly as spawned ones."""
    args = ["task=Cartpole", "gmi.per_gpu=2", "max_iterations=12"]
    reference = LaunchedRun(tmp_path / "a", *args, "gmi.start=spawn")
    assert reference.finish(timeout=300) == 0, reference.text("err")[-3000:]
    assert "spawned: gmi.start=spawn)" in reference.text("err")

    run = LaunchedRun(tmp_path / "b", *args, temp=shared_temp)
    run.wait_for("[GMI x2] epoch 1/", timeout=240)
    pids = [run.proc.pid, *run.gmi_pids()]
    sockets = listening(pids)
    assert all(ip in LOOPBACK for _, ip, _ in sockets), sockets
    assert not [s for s in sockets if s[0] == run.proc.pid]  # the launcher serves no store
    found = probe_as_stranger(str(shared_temp), pids, [port for _, _, port in sockets])
    assert found.stores_found == found.keys_written == 0, found
    if found.other_user:
        assert found.folders_listed == found.files_opened == found.environs_read == 0, found
    assert run.finish(timeout=300) == 0, run.text("err")[-3000:]
    assert "forked: the launcher runs no thread a fork would break)" in run.text("err")
    # same learning, bit for bit: nothing the stranger did reached the run
    ends = [fingerprints(r.text("out")) for r in (run, reference)]
    assert ends[0] == ends[1] and any(w.startswith("end of training") for w in ends[0])
    assert run.leftovers() == []


def test_signed_store_rejects_values_it_did_not_sign():
    raw = dist.HashStore()
    ours = SignedStore(raw, b"s" * 32)
    ours.set("gmi/0/device0", "/dev/shm/isaacgymenvs-gmi-abc")
    assert ours.get("gmi/0/device0") == b"/dev/shm/isaacgymenvs-gmi-abc"
    assert raw.num_keys() == 1 and not raw.check(["gmi/0/device0"])  # stored under a namespace
    stranger = SignedStore(raw, b"t" * 32)
    stranger.set_timeout(timedelta(milliseconds=100))
    with pytest.raises(dist.DistStoreError):  # another secret: another namespace, nothing there
        stranger.get("gmi/0/device0")
    raw.set(ours._prefix + "gmi/0/device0", b"x" * 32 + b"/etc/passwd")  # guessed the name
    with pytest.raises(StoreAuthError, match="not written by a GMI of this run"):
        ours.get("gmi/0/device0")


@pytest.mark.parametrize(
    ("gmis", "sig", "code"),
    [(2, signal.SIGINT, 130), (1, signal.SIGTERM, 143), (2, signal.SIGHUP, 129)],
)
def test_a_stop_signal_ends_the_run_at_an_epoch_with_a_checkpoint_that_plays(
    tmp_path, gmis, sig, code, compose_cfg
):
    run = LaunchedRun(tmp_path, "task=Cartpole", f"gmi.per_gpu={gmis}", "max_iterations=100000")
    run.wait_for(f"[GMI x{gmis}] epoch 3/", timeout=240)  # the same line at 1 GMI as at N
    if gmis > 1:
        run.gmi_pids()
    sent = time.monotonic()
    run.proc.send_signal(sig)
    assert run.finish(timeout=60) == code, run.text("err")[-3000:]
    assert time.monotonic() - sent < budget(30)  # an epoch, a checkpoint, and exit
    last = run.text("err").strip().splitlines()[-1]
    found = re.search(r"final checkpoint: (\S+\.pth)$", last)
    assert found and last.startswith(f"stopped by {sig.name}"), last
    assert os.path.isfile(found.group(1)) and found.group(1) == run.checkpoints()[-1]
    assert run.leftovers() == []
    assert "model" in torch.load(found.group(1))  # torch's default loader (weights_only=True)
    # it plays (in this process: train.py's test=True is tests/rl/test_rl_training.py's)
    play = compose_cfg("task=Cartpole", "test=True", f"checkpoint={found.group(1)}")
    played = launch.run(play, launch.plan_run(play))
    assert played.mean_reward is not None and played.mean_length > 0


@pytest.mark.parametrize(
    ("start", "moment"),
    [
        ("auto", "configs:"),  # the launcher's imports and checks
        ("auto", "launching 2 GMIs"),  # GMIs being forked
        ("spawn", "launching 2 GMIs"),  # GMIs importing everything anew
        ("auto", "epoch 3/3"),  # just after the last epoch
    ],
)
def test_ctrl_c_at_any_moment_ends_cleanly_without_a_traceback(tmp_path, start, moment):
    """A terminal's Ctrl-C (SIGINT to every process of the group) never prints a traceback or
    leaves anything behind, whenever it lands: before the run starts it does not start (130),
    during it the run stops at an epoch (130), after it the run has ended on its own (0)."""
    run = LaunchedRun(
        tmp_path, "task=Cartpole", "gmi.per_gpu=2", "max_iterations=3", f"gmi.start={start}",
        own_group=True, cold=moment == "configs:",  # the launcher's own imports: a cold start
    )  # fmt: skip
    run.wait_for(moment, timeout=240)
    run.signal_group(signal.SIGINT)
    code = run.finish(timeout=120)
    text = run.text("out") + run.text("err")
    assert "Traceback" not in text and "KeyboardInterrupt" not in text, text[-3000:]
    last = run.text("err").strip().splitlines()[-1]
    if moment == "configs:":
        assert code == 130 and last.startswith("stopped by SIGINT before the run started"), last
    else:
        assert code in (0, 130) and "final checkpoint: " in last, last
    assert run.leftovers() == []


def test_a_second_ctrl_c_stops_at_once_without_orphans(tmp_path):
    run = LaunchedRun(tmp_path, "task=Cartpole", "gmi.per_gpu=2", "max_iterations=100000")
    run.wait_for("[GMI x2] epoch 2/", timeout=240)
    os.kill(run.gmi_pids()[0], signal.SIGSTOP)  # GMI 0 cannot reach the epoch boundary
    run.proc.send_signal(signal.SIGINT)
    time.sleep(1.0)
    sent = time.monotonic()
    run.proc.send_signal(signal.SIGINT)
    assert run.finish(timeout=30) == 130, run.text("err")[-3000:]
    assert time.monotonic() - sent < budget(10)
    assert "stopped at once by SIGINT" in run.text("err")
    assert run.leftovers() == []


def test_a_stopped_gmi_is_named_when_detected_and_cleared_within_the_timeout(tmp_path):
    timeout_s = 8
    run = LaunchedRun(
        tmp_path, "task=Cartpole", "gmi.per_gpu=2", "max_iterations=100000",
        f"gmi.timeout_s={timeout_s}",
    )  # fmt: skip
    run.wait_for("[GMI x2] epoch 2/", timeout=240)
    os.kill(run.gmi_pids()[1], signal.SIGSTOP)
    stopped = time.monotonic()
    named = run.wait_for("missing: GMI 1", timeout=timeout_s + 30)
    assert run.finish(timeout=60) == 1
    ended = time.monotonic()
    assert named - stopped < timeout_s + budget(5), named - stopped  # said when detected...
    assert ended - stopped < timeout_s + budget(8), ended - stopped  # ...and cleared a few s later
    assert "stopping the other GMIs" in run.text("err")
    assert run.leftovers() == []


@pytest.fixture(scope="module")
def two_gmis_four_epochs(tmp_path_factory) -> LaunchedRun:
    """Cartpole, 2 GMIs, 4 epochs, finished (the run both resumes below start from)."""
    first = LaunchedRun(
        tmp_path_factory.mktemp("first"), "task=Cartpole", "gmi.per_gpu=2", "max_iterations=4"
    )
    assert first.finish(timeout=300) == 0, first.text("err")[-3000:]
    return first


@pytest.mark.parametrize("after", [1, 3])
def test_frames_after_resume_are_the_runs_total(tmp_path, after, two_gmis_four_epochs):
    per_gmi_epoch = 512 * 16  # Cartpole: numEnvs x horizon_length
    ckpt = two_gmis_four_epochs.checkpoints()[-1]
    state = read_checkpoint(ckpt)
    assert state["frame"] == 4 * 2 * per_gmi_epoch
    second = LaunchedRun(
        tmp_path / "second", "task=Cartpole", f"gmi.per_gpu={after}", "max_iterations=6",
        f"checkpoint={ckpt}",
    )  # fmt: skip
    assert second.finish(timeout=300) == 0, second.text("err")[-3000:]
    resumed = read_checkpoint(second.checkpoints()[-1])
    assert resumed["epoch"] == 6
    assert resumed["frame"] == (4 * 2 + 2 * after) * per_gmi_epoch
    # the progress line goes on from the checkpoint, never back, whatever the GMI count
    shown = re.findall(r"epoch (\d+)/6 frames ([\d,]+)", second.text("out"))
    frames = [(int(e), int(f.replace(",", ""))) for e, f in shown]
    assert frames == [(e, (8 + (e - 4) * after) * per_gmi_epoch) for e in (5, 6)], frames


@pytest.mark.parametrize(
    ("how", "env"),
    [("finished", {}), ("failed", {"ISAACGYMENVS_GMI_FAULT": "2:crash:2"}), ("killed", {})],
)
def test_three_gmis_leave_nothing_in_the_temp_dir(tmp_path, how, env):
    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    iterations = "4" if how != "killed" else "100000"
    run = LaunchedRun(
        tmp_path, "task=Cartpole", "gmi.per_gpu=3", f"max_iterations={iterations}", env=env
    )
    if how == "killed":
        run.wait_for("[GMI x3] epoch 2/", timeout=240)
        os.kill(run.gmi_pids()[1], signal.SIGKILL)
    code = run.finish(timeout=300)
    assert (code == 0) == (how == "finished"), run.text("err")[-3000:]
    assert run.leftovers() == []
    shm_after = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    assert not {n for n in shm_after - shm_before if n.startswith("isaacgymenvs-gmi-")}


def test_under_torchrun_a_stranger_who_lists_the_store_cannot_forge_our_values():
    """torchrun's TCPStore lets anyone who reaches it list, read and rewrite every key: what
    the README says of it. Our values, rewritten by such a stranger, are refused by name."""
    server = dist.TCPStore("127.0.0.1", 0, None, True, timedelta(seconds=5), wait_for_workers=False)
    ours = SignedStore(dist.TCPStore("127.0.0.1", server.port, None, False), b"s" * 32)
    ours.set("gmi/progress/0", "3 grads")
    stranger = dist.TCPStore("127.0.0.1", server.port, None, False, timedelta(seconds=5))
    keys = stranger.list_keys()
    assert keys == [ours.namespace + "v/gmi/progress/0"]  # found by listing, not by name
    assert stranger.get(keys[0]).endswith(b"3 grads")  # readable: signed, not secret
    for forged in (b"9 grads", stranger.get(keys[0])[:-1] + b"9"):
        stranger.set(keys[0], forged)
        with pytest.raises(StoreAuthError, match="'gmi/progress/0' was not written by a GMI"):
            ours.get("gmi/progress/0")
