"""The collective guard names who a timed-out collective waited for: a GMI behind, or one of this
host that reached it and was then stopped by a signal or exited."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from isaacgymenvs_gmi.comm.folder_store import FolderStore
from isaacgymenvs_gmi.gmi.guard import CollectiveGuard
from isaacgymenvs_gmi.gmi.liveness import process_state
from tests.speed import budget


def _failing() -> None:
    raise RuntimeError("Timed out waiting 8000ms for send operation to complete")


def _diagnosis(tmp_path, peer_record: str) -> str:
    store = FolderStore(str(tmp_path))
    guard = CollectiveGuard(store, 0, 2, timeout_s=8)
    store.set("gmi/progress/1", peer_record)
    try:
        guard("grads", _failing)
    except RuntimeError as err:
        return str(err)
    raise AssertionError("the collective did not fail")


def test_a_gmi_behind_is_named_with_its_last_collective(tmp_path):
    message = _diagnosis(tmp_path, "0 some-host:1 start")
    assert "missing: GMI 1 (stuck after collective #0: start)" in message


def test_a_gmi_stopped_after_reaching_the_collective_is_named(tmp_path):
    peer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        os.kill(peer.pid, signal.SIGSTOP)
        deadline = time.monotonic() + budget(10)  # a signal is delivered, not applied, by kill()
        while process_state(peer.pid) != "stopped" and time.monotonic() < deadline:
            time.sleep(0.01)
        message = _diagnosis(tmp_path, f"1 {socket.gethostname()}:{peer.pid} grads")
        assert "missing: GMI 1 (reached it, then stopped by a signal" in message, message
    finally:
        peer.kill()
        peer.wait()
    message = _diagnosis(tmp_path / "gone", f"1 {socket.gethostname()}:{peer.pid} grads")
    assert "missing: GMI 1 (reached it, then exited)" in message, message


def test_a_running_gmi_that_reached_it_is_not_blamed(tmp_path):
    message = _diagnosis(tmp_path, f"1 {socket.gethostname()}:{os.getpid()} grads")
    assert "every GMI reached it" in message
    elsewhere = _diagnosis(tmp_path / "b", "1 another-host:1 grads")  # a pid of another machine
    assert "every GMI reached it" in elsewhere


def test_the_after_hook_runs_once_each_collective_has_returned(tmp_path):
    """``gmi.debug.sync`` waits for the device there; a failed collective is diagnosed instead."""
    calls = []
    guard = CollectiveGuard(FolderStore(str(tmp_path)), 0, 1, 8, after=lambda: calls.append(1))
    assert guard("grads", lambda: "reduced") == "reduced" and calls == [1]
    with pytest.raises(RuntimeError, match="missing|reached"):
        guard("grads", _failing)
    assert calls == [1]
