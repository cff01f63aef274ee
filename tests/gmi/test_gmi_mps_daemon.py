"""The MPS daemon we start is stopped however its owner ends, SIGKILL included.

The NVIDIA control program does not exist without a GPU, so these CPU tests put a stand-in
``nvidia-cuda-mps-control`` first on PATH: a shell script that, like the real one, daemonizes on
``-d`` (a sleeping process in a session of its own, its pid next to a ``control`` file in the pipe
directory) and obeys ``get_server_list`` / ``quit`` on stdin. The real daemon is exercised by the
same scenario in ``test_gmi_gpu.py``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.speed import budget

STAND_IN_CONTROL = r"""#!/bin/sh
# stand-in for nvidia-cuda-mps-control (see the test module's docstring)
pipe="$CUDA_MPS_PIPE_DIRECTORY"
if [ "$1" = "-d" ]; then
    setsid sleep 600 </dev/null >/dev/null 2>&1 &
    echo $! > "$pipe/daemon.pid"
    touch "$pipe/control"
    exit 0
fi
[ -e "$pipe/control" ] || exit 1
read -r command
case "$command" in
    get_server_list) exit 0 ;;
    quit)
        kill "$(cat "$pipe/daemon.pid")"
        rm -f "$pipe/control"
        echo quit >> "$MPS_STAND_IN_RECORD" ;;
esac
"""

OWNER = textwrap.dedent(
    """
    import sys, time
    from isaacgymenvs_gmi.gmi.mps import mps_daemon
    with mps_daemon() as pipe_dir:
        print(pipe_dir, flush=True)
        print(open(pipe_dir + "/daemon.pid").read().strip(), flush=True)
        if sys.argv[1] == "hold":
            time.sleep(600)
    """
)


@pytest.fixture
def stand_in_control(tmp_path: Path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    control = bin_dir / "nvidia-cuda-mps-control"
    control.write_text(STAND_IN_CONTROL)
    control.chmod(0o755)
    record = tmp_path / "record"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("MPS_STAND_IN_RECORD", str(record))
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path / "no-daemon-here"))
    return record


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone_within(seconds: float, *checks) -> bool:
    deadline = time.monotonic() + budget(seconds)
    while time.monotonic() < deadline:
        if not any(check() for check in checks):
            return True
        time.sleep(0.05)
    return False


def test_a_normal_exit_stops_the_daemon_once(stand_in_control: Path):
    out = subprocess.run(
        [sys.executable, "-c", OWNER, "leave"], capture_output=True, text=True, timeout=budget(60)
    )
    assert out.returncode == 0, out.stderr
    pipe_dir, pid = out.stdout.split()
    assert _gone_within(10, lambda: _alive(int(pid)), lambda: os.path.exists(pipe_dir))
    assert stand_in_control.read_text().split() == ["quit"]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_an_owner_killed_without_cleanup_still_stops_its_daemon(stand_in_control: Path, sig):
    """Neither signal runs the owner's ``finally`` (it installs no handler); the watcher does."""
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, "hold"],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        pipe_dir = owner.stdout.readline().strip()
        pid = int(owner.stdout.readline())
        assert _alive(pid) and os.path.exists(f"{pipe_dir}/control")
        os.killpg(owner.pid, sig)  # the whole group, as the planner's last resort does
        owner.wait(timeout=budget(30))
    finally:
        if owner.poll() is None:
            owner.kill()
    assert _gone_within(10, lambda: _alive(pid), lambda: os.path.exists(pipe_dir))
    assert stand_in_control.read_text().split() == ["quit"]


def test_mps_clients_keep_addmm_off_cublaslt_unless_the_user_says(monkeypatch):
    from isaacgymenvs_gmi.gmi.mps import client_environment

    monkeypatch.delenv("DISABLE_ADDMM_CUDA_LT", raising=False)
    assert client_environment(33.33) == {
        "DISABLE_ADDMM_CUDA_LT": "1",
        "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE": "33.33",
    }
    assert client_environment(None) == {"DISABLE_ADDMM_CUDA_LT": "1"}  # uncapped
    monkeypatch.setenv("DISABLE_ADDMM_CUDA_LT", "0")  # the user's own choice wins
    assert client_environment(50.0)["DISABLE_ADDMM_CUDA_LT"] == "0"
