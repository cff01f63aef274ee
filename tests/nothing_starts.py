"""The guard of the before-start tests: any process, GMI or simulator created fails the test;
and ``train_py_refusal``, what ``train.py`` prints for a config it refuses, found in process."""

from __future__ import annotations

import multiprocessing.process
import subprocess
from collections.abc import Callable

import psutil
import pytest

from isaacgymenvs_gmi import api, launch
from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.sim import mujoco_backend

NO_GPU = (False, ("cpu",), False)  # (cuda available, JAX platforms, warp installed)


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


@pytest.fixture
def train_py_refusal(monkeypatch, nothing_may_start) -> Callable[..., str]:
    """``train_py_refusal(cfg)`` -> the line ``train.py`` prints before exiting 2 for ``cfg``:
    ``error: `` and the :class:`ConfigError` of :func:`api.run`, the call it makes, here on a
    machine without GPUs and with nothing allowed to start. That ``train.py`` prints it so and
    exits 2 is proven once as a process (tests/test_cli_errors.py)."""
    monkeypatch.setattr(launch, "detect_platform", lambda: NO_GPU)

    def refusal(cfg) -> str:
        with pytest.raises(ConfigError) as refused:
            api.run(cfg)
        return f"error: {refused.value}"

    return refusal
