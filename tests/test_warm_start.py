"""A run started warm (tests/warm_start.py) is the run a cold ``python train.py`` makes: the same
lines on both streams, numbers aside, and the same exit; and what decides a cold start."""

from __future__ import annotations

import os
import re
import sys

from tests import warm_start
from tests.helpers import TRAIN_PY, fingerprints
from tests.speed import budget

TWO_GMIS = ("task=Cartpole", "gmi.per_gpu=2", "num_envs=64", "max_iterations=2")
TWO_GMIS += ("train.params.config.minibatch_size=512", "gmi.compile_cache=off")


def _lines(proc, out: str, err: str, folder: str) -> tuple[int, list[str], list[str]]:
    """(exit code, stdout lines, stderr lines), the run's folder and every number masked,
    each stream sorted (GMIs print side by side)."""

    def mask(text: str) -> list[str]:
        return sorted(
            re.sub(r"\d[\d,.]*", "N", line.replace(folder, "RUN")) for line in text.splitlines()
        )

    return proc.returncode, mask(out), mask(err)


def _run(tmp_path, name: str, cold: bool):
    folder = str(tmp_path / name)
    argv = [sys.executable, TRAIN_PY, *TWO_GMIS, f"train_dir={folder}"]
    proc = warm_start.start(argv, tmp_path, dict(os.environ), cold=cold)
    out, err = proc.communicate(timeout=budget(300))
    return proc, _lines(proc, out, err, folder), fingerprints(out).get("initial weights")


def test_a_warm_run_says_and_ends_as_a_cold_one(tmp_path):
    """Numbers aside: a warm run's start is the cold run's bit for bit (the seeded initial
    weights), but its training drifts from it at float rounding after some epochs, as a run on
    another machine does (seeded Cartpole on two GMIs: the same rewards for 9 epochs, then the
    last digit), so tests compare runs bit for bit only between runs started the same way."""
    warm_proc, warm, warm_weights = _run(tmp_path, "warm", cold=False)
    cold_proc, cold, cold_weights = _run(tmp_path, "cold", cold=True)
    assert warm_weights and warm_weights == cold_weights
    assert isinstance(warm_proc, warm_start.WarmProcess)
    assert not isinstance(cold_proc, warm_start.WarmProcess)
    assert warm[0] == cold[0] == 0, warm[2][-20:]
    assert warm[1] == cold[1]
    assert warm[2] == cold[2]
    assert any("forked: the launcher runs no thread" in line for line in warm[2])


def test_what_is_read_at_import_time_decides_a_cold_start():
    env = dict(os.environ)
    argv = [sys.executable, TRAIN_PY, "task=Cartpole"]
    assert warm_start.warm(argv, env)
    assert warm_start.warm(argv, {**env, "TMPDIR": "/elsewhere", "WANDB_MODE": "offline"})
    assert warm_start.warm(argv, {**env, "PYTHONWARNINGS": env.get("PYTHONWARNINGS", "")})
    for key in ("PYTHONPATH", "PYTHONHASHSEED", "JAX_PLATFORMS", "XLA_FLAGS", "OMP_NUM_THREADS"):
        assert not warm_start.warm(argv, {**env, key: "changed"}), key
    assert not warm_start.warm([sys.executable, "-m", "torch.distributed.run", TRAIN_PY], env)
    assert not warm_start.warm(["/usr/bin/python3", TRAIN_PY], env)
