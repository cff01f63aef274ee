"""What many tests need: ``train.py`` run to its end (warm where it may:
:mod:`tests.warm_start`), the progress lines read back, a free TCP port, float32 arrays. A run
followed while it goes (signals, faults) is :class:`tests.gmi.launched_run.LaunchedRun`."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tests import warm_start
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[1]
TRAIN_PY = str(ROOT / "train.py")
# GMI 0's progress line: GMIs, epoch, ..., mean reward ("-" before the first episode ends)
PROGRESS = re.compile(r"\[GMI x(\d+)\] epoch (\d+)/\d+ .*\| mean reward (-?[\d.]+|-) \|")


def run_train(
    *args: str,
    cwd: Path | str = ROOT,
    env: Mapping[str, str] | None = None,
    pythonpath: Sequence[Path | str] = (),
    timeout_s: float = 300,
    launcher: Sequence[str] = (sys.executable,),
) -> subprocess.CompletedProcess:
    """``train.py ARGS`` to its end, output captured as text; ``env`` adds to this process's
    environment, ``pythonpath`` replaces PYTHONPATH; ``timeout_s`` on the reference machine."""
    full = {**os.environ, **(env or {})}
    if pythonpath:
        full["PYTHONPATH"] = os.pathsep.join(map(str, pythonpath))
    return finished([*launcher, TRAIN_PY, *args], cwd, full, timeout_s)


def finished(
    argv: Sequence[str], cwd: Path | str, env: Mapping[str, str], timeout_s: float
) -> subprocess.CompletedProcess:
    """``argv`` run to its end (started warm where it may: :mod:`tests.warm_start`), output
    captured as text; killed after ``timeout_s`` on the reference machine (stretched)."""
    proc = warm_start.start(argv, cwd, env)
    try:
        out, err = proc.communicate(timeout=budget(timeout_s))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)


def assert_ok(proc: subprocess.CompletedProcess, tail: int = 3000) -> None:
    """``proc`` exited 0; otherwise fail with the end of what it wrote on stderr."""
    assert proc.returncode == 0, proc.stderr[-tail:]


IDENTICAL = re.compile(r"^replicas identical at '([^']+)' on (\d+) GMIs: ([a-z0-9=, ]+)$", re.M)


def fingerprints(stdout: str) -> dict[str, tuple[int, str]]:
    """Each replica check a run printed: ``{what: (GMIs, labelled hashes)}``, e.g.
    ``{"initial weights": (2, "model=..., optimizer=...")}``."""
    return {what: (int(n), prints) for what, n, prints in IDENTICAL.findall(stdout)}


def mean_rewards(stdout: str) -> list[float]:
    """The mean episode reward of each progress line that has one."""
    return [float(r) for *_, r in PROGRESS.findall(stdout) if r != "-"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def f32(x):
    """``x`` as a float32 JAX array, rounded once from float64 (as the tasks' buffers are)."""
    import jax.numpy as jnp

    return jnp.asarray(np.asarray(x, dtype=np.float64), jnp.float32)
