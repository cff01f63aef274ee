"""How much slower this machine is, right now, than the one the suite's time limits were set on.

Tests never assert how fast something is; they only wait for it, and every such wait (a run to
finish, a line to appear, a detection slack) is given in seconds on the reference machine (the
README's 2-core VM) and stretched by :func:`budget`. The factor is measured once per test
session by :func:`calibrate` (called from ``conftest.pytest_configure``): the kind of work the
suite is made of (MuJoCo stepping, a small torch MLP forward and backward, numpy) run on every
core at once, one process per core as the suite's multi-GMI runs do, so that a machine that is
slower or busy (another job holding a core) is seen as such; the median of a few rounds divided by
its time on the reference machine. It is never below 1, so a fast machine keeps the written
limits. ``GMI_TEST_SPEED_FACTOR`` overrides it (e.g. ``=3`` on a machine known to be shared), and
is how the measured factor reaches the test processes a test starts.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ENV = "GMI_TEST_SPEED_FACTOR"
REFERENCE_S = 0.090  # median round on the reference machine, nothing else running
ROUNDS = 15  # about 3 s at factor 2 (5 rounds, one second, read 1.7 to 2.2 between runs)
_FOUR_LEGS = """  # an Ant-sized body: a free torso and four two-joint legs
<mujoco><option timestep="0.01"/><worldbody><geom type="plane" size="5 5 .1"/>
<body pos="0 0 .75"><freejoint/><geom type="sphere" size=".25"/>
<body><joint type="hinge" axis="0 0 1" range="-30 30"/><geom type="capsule" fromto="0 0 0 .4 .4 0"
size=".08"/><body pos=".4 .4 0"><joint type="hinge" axis="-1 1 0" range="30 70"/>
<geom type="capsule" fromto="0 0 0 .4 .4 0" size=".08"/></body></body>
<body><joint type="hinge" axis="0 0 1" range="-30 30"/><geom type="capsule" fromto="0 0 0 -.4 .4 0"
size=".08"/><body pos="-.4 .4 0"><joint type="hinge" axis="1 1 0" range="-70 -30"/>
<geom type="capsule" fromto="0 0 0 -.4 .4 0" size=".08"/></body></body>
<body><joint type="hinge" axis="0 0 1" range="-30 30"/><geom type="capsule" fromto="0 0 0 -.4 -.4 0"
size=".08"/><body pos="-.4 -.4 0"><joint type="hinge" axis="-1 1 0" range="-70 -30"/>
<geom type="capsule" fromto="0 0 0 -.4 -.4 0" size=".08"/></body></body>
<body><joint type="hinge" axis="0 0 1" range="-30 30"/><geom type="capsule" fromto="0 0 0 .4 -.4 0"
size=".08"/><body pos=".4 -.4 0"><joint type="hinge" axis="1 1 0" range="30 70"/>
<geom type="capsule" fromto="0 0 0 .4 -.4 0" size=".08"/></body></body>
</body></worldbody></mujoco>
"""


def _work() -> float:
    """Seconds for one round of the suite's kind of single-core work."""
    import mujoco
    import numpy as np
    import torch

    model = mujoco.MjModel.from_xml_string(_FOUR_LEGS)
    data = mujoco.MjData(model)
    net = torch.nn.Sequential(
        torch.nn.Linear(60, 256), torch.nn.ELU(), torch.nn.Linear(256, 128), torch.nn.ELU()
    )
    x = torch.randn(512, 60)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    for _ in range(3000):
        data.ctrl[:] = rng.uniform(-1, 1, model.nu)
        mujoco.mj_step(model, data)
    for _ in range(30):
        net(x).square().mean().backward()
    np.sort(rng.standard_normal(400_000))
    return time.perf_counter() - start


def _rounds(n: int) -> float:
    """Median seconds of ``n`` rounds in this process, on one thread."""
    import torch

    torch.set_num_threads(1)
    return statistics.median(_work() for _ in range(n))


def measure(rounds: int = ROUNDS) -> float:
    """The slowdown now (not published): one process per usable core, all at once, each timing
    ``rounds`` rounds; their mean against the reference machine's, >= 1."""
    cores = len(os.sched_getaffinity(0))
    code = f"from tests.speed import _rounds; print(_rounds({rounds}))"
    root = Path(__file__).resolve().parents[1]
    workers = [
        subprocess.Popen([sys.executable, "-c", code], cwd=root, stdout=subprocess.PIPE, text=True)
        for _ in range(cores)
    ]
    times = [float(w.communicate(timeout=300)[0]) for w in workers]
    return max(1.0, statistics.mean(times) / REFERENCE_S)


def calibrate(rounds: int = ROUNDS) -> float:
    """Measures the factor (once per process tree) and publishes it in ``GMI_TEST_SPEED_FACTOR``."""
    if ENV in os.environ:
        return factor()
    os.environ[ENV] = f"{measure(rounds):.2f}"
    return factor()


def factor() -> float:
    """The measured (or given) slowdown against the reference machine, >= 1."""
    value = os.environ.get(ENV)
    if value is None:
        return calibrate()
    try:
        return max(1.0, float(value))
    except ValueError:
        raise ValueError(f"{ENV}={value!r}: expected a number >= 1") from None


def budget(seconds: float) -> float:
    """``seconds`` on the reference machine, stretched to this one's speed."""
    return seconds * factor()
