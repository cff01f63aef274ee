"""MJX on the CPU: the mass matrix is factored sparsely (jaxlib's batched dense Cholesky
deadlocks on XLA's CPU thread pool at a few dozen worlds; Humanoid at 256 envs hung with every
thread idle)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jax
import mujoco

from isaacgymenvs_gmi.sim.mjx_backend import _for_device
from isaacgymenvs_gmi.sim.model import compile_task_model
from isaacgymenvs_gmi.tasks import get_task_class
from tests.env_fixtures import load_task_cfg
from tests.helpers import assert_ok
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[2]


def test_the_cpu_gets_a_sparse_copy_and_the_callers_model_is_left_alone():
    model = compile_task_model(get_task_class("Humanoid"), load_task_cfg("Humanoid"))[0]
    assert model.opt.jacobian == mujoco.mjtJacobian.mjJAC_AUTO  # dense for nv < 60
    sparse = _for_device(model, jax.devices("cpu")[0])
    assert sparse.opt.jacobian == mujoco.mjtJacobian.mjJAC_SPARSE
    assert model.opt.jacobian == mujoco.mjtJacobian.mjJAC_AUTO


STEP_MANY_WORLDS = """
import copy, torch
from tests.env_fixtures import load_task_cfg
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask
cfg = copy.deepcopy(load_task_cfg("Humanoid"))
cfg["env"]["numEnvs"] = 256
env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(backend="mjx"))
for _ in range(3):
    obs = env.step(torch.zeros(256, env.num_actions))[0]["obs"]
print("stepped", float(obs.abs().sum()) > 0)
"""


def test_many_worlds_with_a_dense_sized_model_step_without_hanging():
    proc = subprocess.run(
        [sys.executable, "-c", STEP_MANY_WORLDS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(240),  # compiling takes ~15 s here; the dense factorisation never returned
    )
    assert_ok(proc, 2000)
    assert "stepped True" in proc.stdout
