"""The guard of the before-start tests: any process, GMI or simulator created fails the test."""

from __future__ import annotations

import multiprocessing.process
import subprocess

import psutil
import pytest

from isaacgymenvs_gmi import launch
from isaacgymenvs_gmi.sim import mujoco_backend


@pytest.fixture
def nothing_may_start(monkeypatch):
    """Fail the test if a process, a GMI or a simulator is created; yields the children before."""

    def refuse(*args, **kwargs):
        raise AssertionError("started work for an input that should have been refused")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)
    monkeypatch.setattr(multiprocessing.process.BaseProcess, "start", refuse)
    for name in ("spawn_gmis", "run_in_process", "gmi_main"):
        monkeypatch.setattr(launch, name, refuse)
    monkeypatch.setattr(mujoco_backend.MujocoBackend, "__init__", refuse)
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    after = {p.pid for p in psutil.Process().children(recursive=True)}
    assert after <= before, "a child process was created"
