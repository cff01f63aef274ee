"""The NVIDIA MPS control daemon for GMIs that share a GPU as MPS clients.

If a daemon already serves this user (its pipe directory answers), GMIs use it. Otherwise we start
one with private, 0700 pipe and log directories, point the GMIs at it through
CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY, and always stop it on the way out.
Never changes the GPU's compute mode.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator

log = logging.getLogger(__name__)
CONTROL = "nvidia-cuda-mps-control"
DEFAULT_PIPE_DIR = "/tmp/nvidia-mps"


def _query(pipe_dir: str, command: str, timeout: float = 5.0) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe_dir}
    return subprocess.run(
        [CONTROL], input=command + "\n", env=env, capture_output=True, text=True, timeout=timeout
    )


def daemon_running(pipe_dir: str) -> bool:
    if shutil.which(CONTROL) is None or not os.path.exists(os.path.join(pipe_dir, "control")):
        return False
    try:
        return _query(pipe_dir, "get_server_list").returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@contextlib.contextmanager
def mps_daemon() -> Iterator[str]:
    """A running MPS daemon's pipe directory, starting (and later stopping) our own if needed."""
    existing = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", DEFAULT_PIPE_DIR)
    if daemon_running(existing):
        log.info("using the running MPS daemon (%s)", existing)
        os.environ["CUDA_MPS_PIPE_DIRECTORY"] = existing
        yield existing
        return
    if shutil.which(CONTROL) is None:
        raise RuntimeError(
            f"gmi.backend=mps: {CONTROL} not found (install the NVIDIA driver utils)"
        )
    root = tempfile.mkdtemp(prefix="gmi-mps-")
    pipe_dir, log_dir = os.path.join(root, "pipe"), os.path.join(root, "log")
    for d in (pipe_dir, log_dir):
        os.makedirs(d, mode=0o700)
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe_dir, "CUDA_MPS_LOG_DIRECTORY": log_dir}
    subprocess.run([CONTROL, "-d"], env=env, check=True, timeout=30)
    saved = {k: os.environ.get(k) for k in ("CUDA_MPS_PIPE_DIRECTORY", "CUDA_MPS_LOG_DIRECTORY")}
    os.environ.update(CUDA_MPS_PIPE_DIRECTORY=pipe_dir, CUDA_MPS_LOG_DIRECTORY=log_dir)
    log.info("started an MPS daemon (pipes in %s)", pipe_dir)
    try:
        yield pipe_dir
    finally:
        try:
            _query(pipe_dir, "quit", timeout=30)
        finally:
            for k, v in saved.items():
                os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            shutil.rmtree(root, ignore_errors=True)
            log.info("stopped the MPS daemon we started")


@contextlib.contextmanager
def mps_daemon_for(backend: str) -> Iterator[None]:
    if backend != "mps":
        yield
        return
    with mps_daemon():
        yield
