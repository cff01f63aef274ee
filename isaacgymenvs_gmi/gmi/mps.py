"""The NVIDIA MPS control daemon for GMIs that share a GPU as MPS clients.

A daemon already serving this user is used; else we start one with private 0700 pipe and log
directories (CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY) and always stop it, never
changing the GPU's compute mode. "Always" includes deaths no ``finally`` sees (SIGKILL, OOM): a
watcher in its own session reads a pipe only we write to and, on EOF, stops the daemon and
removes its folders.
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
# torch's addmm through cuBLASLt's fused-bias GEMM gave non-finite bf16 outputs from finite
# inputs in capped MPS clients; through cuBLAS (this setting) the run trains (H100, torch 2.11 +
# CUDA 13: bench/results/gpu_h100/cublaslt/).
ADDMM_LT_OFF = "DISABLE_ADDMM_CUDA_LT"


def client_environment(sm_percent: float | None) -> dict[str, str]:
    """Variables an MPS client needs before CUDA starts: its SM share (None: uncapped) and
    addmm off cuBLASLt (unless the user's environment sets that)."""
    env = {ADDMM_LT_OFF: os.environ.get(ADDMM_LT_OFF, "1")}
    if sm_percent is not None:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = f"{sm_percent:g}"
    return env


def _query(pipe_dir: str, command: str, timeout: float = 5.0) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe_dir}
    return subprocess.run(
        [CONTROL], input=command + "\n", env=env, capture_output=True, text=True, timeout=timeout
    )


# $0 = the control program, $1 = pipe dir, $2 = folder to remove; stdin = the owner's pipe
_WATCHER = 'cat >/dev/null; if [ -e "$1/control" ]; then echo quit | "$0"; fi; rm -rf -- "$2"'


def _watch_owner(pipe_dir: str, root: str) -> tuple[subprocess.Popen, int]:
    """Start the watcher; returns it and the pipe end whose closing (or our death) sets it off."""
    read_end, write_end = os.pipe()  # neither end is inherited by programs we start
    try:
        watcher = subprocess.Popen(
            ["sh", "-c", _WATCHER, CONTROL, pipe_dir, root],
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "CUDA_MPS_PIPE_DIRECTORY": pipe_dir},
            start_new_session=True,  # a signal to our process group does not reach it
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return watcher, write_end


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
    watcher, owner_end = _watch_owner(pipe_dir, root)
    try:
        subprocess.run([CONTROL, "-d"], env=env, check=True, timeout=30)
    except BaseException:
        os.close(owner_end)  # the watcher removes the folders
        raise
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
            os.close(owner_end)
            with contextlib.suppress(subprocess.TimeoutExpired):
                watcher.wait(timeout=10)
            log.info("stopped the MPS daemon we started")
