"""Process liveness from ``/proc/<pid>/stat``: a real child read as running, stopped, running
again, a zombie and gone; names holding ``)`` parsed at the last one; the ``os.kill`` fallback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, RUNNING, STOPPED
from isaacgymenvs_gmi.gmi import liveness
from isaacgymenvs_gmi.gmi.gmi_process import GmiProcess
from isaacgymenvs_gmi.gmi.liveness import is_alive, process_state
from isaacgymenvs_gmi.gmi.scratch import PREFIX, remove_abandoned
from isaacgymenvs_gmi.runners.async_ppo.accounting import actor_gone
from tests.speed import budget

SLEEPER = [sys.executable, "-c", "import time; time.sleep(60)"]
# names itself (PR_SET_NAME = 15) and says so, then sleeps
NAMED = (
    "import ctypes, sys, time; "
    "assert ctypes.CDLL(None, use_errno=True).prctl(15, sys.argv[1].encode(), 0, 0, 0) == 0; "
    "print('named', flush=True); time.sleep(60)"
)


def _reads(pid: int, want: str, timeout_s: float = 10.0) -> str:
    """The state of ``pid`` once it reads ``want`` (signals land asynchronously), else the last
    state read."""
    deadline = time.monotonic() + budget(timeout_s)
    while (state := process_state(pid)) != want and time.monotonic() < deadline:
        time.sleep(0.01)
    return state


def _end(child: subprocess.Popen) -> None:
    if child.poll() is None:
        child.kill()
        child.wait()


def test_a_child_reads_running_stopped_running_zombie_gone():
    child = subprocess.Popen(SLEEPER)
    try:
        assert process_state(child.pid) == "running" and is_alive(child.pid)
        os.kill(child.pid, signal.SIGSTOP)
        assert _reads(child.pid, "stopped") == "stopped" and is_alive(child.pid)
        os.kill(child.pid, signal.SIGCONT)
        assert _reads(child.pid, "running") == "running"
        child.kill()
        assert _reads(child.pid, "zombie") == "zombie" and not is_alive(child.pid)
        child.wait()
        assert process_state(child.pid) == "gone" and not is_alive(child.pid)
    finally:
        _end(child)


def test_a_stopped_child_killed_reads_zombie():
    child = subprocess.Popen(SLEEPER)
    try:
        os.kill(child.pid, signal.SIGSTOP)
        assert _reads(child.pid, "stopped") == "stopped"
        child.kill()  # SIGKILL ends a stopped process too
        assert _reads(child.pid, "zombie") == "zombie"
    finally:
        _end(child)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
@pytest.mark.parametrize("name", ["a) (b", "x) Z (y", "p) T (q) R"])
def test_a_name_with_parentheses_is_split_at_the_last_one(name):
    child = subprocess.Popen([sys.executable, "-c", NAMED, name], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "named\n"
        assert Path(f"/proc/{child.pid}/comm").read_text() == name + "\n"
        assert process_state(child.pid) == "running"  # a split at the first ')' reads Z or T
        os.kill(child.pid, signal.SIGSTOP)
        assert _reads(child.pid, "stopped") == "stopped"
        child.kill()
        assert _reads(child.pid, "zombie") == "zombie"
    finally:
        _end(child)
        if child.stdout is not None:
            child.stdout.close()


@pytest.mark.parametrize(
    ("line", "state"),
    [
        (b"42 (a) Z (b) S 1 42 42 0 -1", "running"),
        (b"42 (a) R (b) T 1 42 42 0 -1", "stopped"),
        (b"42 (x) (y) t 1 42 42 0 -1", "stopped"),
        (b"42 (a\nb) Z 1 42 42 0 -1", "zombie"),
        (b"42 (\xff\xfe) D 1 42 42 0 -1", "running"),  # not UTF-8: read as bytes
        (b"42 (a) X 1 42 42 0 -1", "gone"),
        (b"42 (a) I 2 0 0 0 -1", "running"),
    ],
)
def test_stat_lines_are_parsed_at_the_last_parenthesis(tmp_path, monkeypatch, line, state):
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "stat").write_bytes(line)
    monkeypatch.setattr(liveness.os, "kill", _no_signals)
    assert process_state(42, tmp_path) == state


def _no_signals(pid: int, sig: int) -> None:
    raise AssertionError(f"os.kill({pid}, {sig}) called though /proc answered")


@pytest.mark.parametrize(
    ("raised", "state"),
    [
        (None, "running"),
        (PermissionError, "running"),  # someone else's process exists
        (ProcessLookupError, "gone"),
        (OverflowError, "gone"),  # no pid is that large
    ],
)
def test_without_proc_os_kill_decides(tmp_path, monkeypatch, raised, state):
    probed = []

    def kill(pid: int, sig: int) -> None:
        probed.append((pid, sig))
        if raised is not None:
            raise raised

    monkeypatch.setattr(liveness.os, "kill", kill)
    assert process_state(42, tmp_path / "no-proc") == state
    assert probed == [(42, 0)]


def test_an_unparsable_stat_falls_back_to_os_kill(tmp_path, monkeypatch):
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "stat").write_bytes(b"42 no parenthesis")
    monkeypatch.setattr(liveness.os, "kill", lambda pid, sig: None)
    assert process_state(42, tmp_path) == "running"


def test_a_real_child_without_proc_reads_running_then_gone(tmp_path):
    child = subprocess.Popen(SLEEPER)
    try:
        assert process_state(child.pid, tmp_path) == "running"
        child.kill()
        child.wait()
        assert process_state(child.pid, tmp_path) == "gone"
    finally:
        _end(child)


@pytest.mark.parametrize("pid", [0, -1])
def test_no_single_process_below_pid_1(pid, monkeypatch):
    monkeypatch.setattr(liveness.os, "kill", _no_signals)
    assert process_state(pid) == "gone" and not is_alive(pid)


class _Route:
    """An actor's route as the trainer reads it: only its control words."""

    def __init__(self, pid: int, state: int = RUNNING):
        self.words = {ACTOR_PID: pid, ACTOR_STATE: state}

    def control(self, word: int) -> int:
        return self.words[word]


def test_each_user_treats_stopped_and_zombie_as_before(tmp_path):
    """The launcher kills a stopped GMI (and nothing else); the trainer keeps waiting for a
    stopped actor but not for a zombie; a zombie launcher's run folder is kept until reaped."""
    child = subprocess.Popen(SLEEPER)
    gmi = GmiProcess(rank=1, process=SimpleNamespace(pid=child.pid), results=None)
    route = _Route(child.pid)
    folder = tmp_path / f"{PREFIX}{child.pid}-abc"
    folder.mkdir()

    def seen() -> tuple[bool, bool, bool]:  # (stopped to the launcher, gone to the trainer, kept)
        kept = not remove_abandoned(str(tmp_path))
        return gmi.stopped, actor_gone(route), kept

    try:
        assert seen() == (False, False, True)
        os.kill(child.pid, signal.SIGSTOP)
        assert _reads(child.pid, "stopped") == "stopped"
        assert seen() == (True, False, True)
        child.kill()
        assert _reads(child.pid, "zombie") == "zombie"
        assert seen() == (False, True, True)
        child.wait()
        assert seen() == (False, True, False) and not folder.exists()
    finally:
        _end(child)
    assert actor_gone(_Route(0)) is False  # no pid published yet: still starting
    assert actor_gone(_Route(os.getpid(), STOPPED)) is True  # said it stopped: not looked up
    assert GmiProcess(rank=1, process=SimpleNamespace(pid=None), results=None).stopped is False
