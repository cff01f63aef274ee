"""The launcher forks its GMIs only while a fork cannot break anything in them: no other Python
thread, no JAX backend, no native thread started since the imports (torch's pool here; an OpenGL
renderer's in a video run), no CUDA, not for a GPU run, not with ``gmi.start=spawn``; planning a
run of the suite's tasks leaves JAX's backend unstarted (checked in fresh processes)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from isaacgymenvs_gmi.config import ConfigError, GmiConfig
from isaacgymenvs_gmi.gmi.start_method import start_method
from tests.helpers import assert_ok

DECIDE = """
import sys, threading, time
import numpy, torch, jax, jax.numpy as jnp, mujoco
from isaacgymenvs_gmi.gmi.start_method import start_method
print(start_method("auto", False))
if sys.argv[1] == "thread":
    threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
elif sys.argv[1] == "jax":
    jnp.ones(3).block_until_ready()
elif sys.argv[1] == "native":
    torch.set_num_threads(2)
    (torch.ones(4_000_000) * 2).sum()  # starts torch's intra-op pool
print(start_method("auto", False))
"""

PLAN = """
import sys
from jax._src import xla_bridge
from isaacgymenvs_gmi.api import compose_config
from isaacgymenvs_gmi.launch import plan_run
overrides = ["num_envs=64", "train.params.config.minibatch_size=64", "gmi.per_gpu=2"]
plan = plan_run(compose_config("task=" + sys.argv[1], *overrides))
print(plan.dims, xla_bridge.backends_are_initialized())
"""


def _run(code: str, arg: str) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True)
    assert_ok(proc)
    return proc.stdout.strip().splitlines()


def test_choices_that_need_no_process_state():
    assert start_method("spawn", False) == ("spawn", "gmi.start=spawn")
    assert start_method("auto", True) == ("spawn", "the run uses a GPU")
    assert GmiConfig.from_node({}).start == "auto"
    with pytest.raises(ConfigError, match=r"^gmi\.start='fork': must be one of 'auto', 'spawn'"):
        GmiConfig.from_node({"start": "fork"})


@pytest.mark.parametrize(
    "state, why",
    [
        ("thread", "the launcher runs 2 Python threads"),
        ("jax", "the launcher has started JAX's backend"),
        ("native", r"the launcher has started \d+ native thread\(s\) since its imports"),
    ],
)
def test_a_thread_a_started_jax_backend_or_a_new_native_thread_means_spawn(state, why):
    before, after = _run(DECIDE, state)
    assert before == "('fork', 'the launcher runs no thread a fork would break')"
    assert re.fullmatch(rf"\('spawn', [\"']{why}[\"']\)", after), after


def test_planning_leaves_jax_unstarted_and_sizes_the_task():
    dims, started = _run(PLAN, "Ant")[-1].rsplit(" ", 1)
    assert dims == "(60, 0, 8)" and started == "False"
    # a task whose constructor needs concrete values is built for real: same sizes, JAX started
    dims, started = _run(PLAN, "Anymal")[-1].rsplit(" ", 1)
    assert dims == "(48, 0, 12)" and started == "True"
