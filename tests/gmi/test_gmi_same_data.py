"""Exact on identical data: with ``gmi.debug.same_data`` every GMI steps the envs one process
with that seed steps, so N GMIs of n envs must train what one process of n envs trains. After two
epochs the weights, the normalisers' statistics and the learning rate agree to float rounding
(measured: 5e-6 of a tensor's largest value for Cartpole on two GMIs, 1e-7 after one update). The
union's counts are made exact under the switch, not bounded: N copies of one batch count as that
batch (:func:`patches.synced_normalizers.union_moments`), so the normalisers' prior weight and the
advantages' unbiased std are one process's. A wrong merge that keeps the replicas identical (here
a sum where the mean belongs, injected on every GMI) fails the same check by far (0.3).

What a same-data run cannot see: a merge that picks one GMI's figure where the mean belongs (one
GMI's KL, say), since every GMI holds the same figure. The numerical audit covers that part.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint
from isaacgymenvs_gmi.gmi.faults import FAULT_ENV
from tests.helpers import assert_ok, run_train

TOLERANCE = 1e-4  # of each tensor's largest magnitude; 20x what float rounding gave here
SIZES = {  # task: envs per GMI and a minibatch that splits 16 steps of them in four
    "Cartpole": ("num_envs=64", "train.params.config.minibatch_size=256"),
    "Ant": ("num_envs=32", "train.params.config.minibatch_size=128"),
}


def _trained(tmp_path: Path, task: str, backend: str, gmis: int, env=None) -> dict:
    """The checkpoint of a 2-epoch seed-5 run of ``task`` on ``gmis`` GMIs with one seed."""
    proc = run_train(
        f"task={task}",
        *SIZES[task],
        f"sim_backend={backend}",
        f"gmi.per_gpu={gmis}",
        "gmi.debug.same_data=True",
        "seed=5",
        "max_iterations=2",
        f"train_dir={tmp_path / 'runs'}",
        env=env,
        timeout_s=240,
    )
    assert_ok(proc)
    (path,) = (tmp_path / "runs").glob("*/nn/last_*.pth")
    return read_checkpoint(str(path))


def _worst(one: dict, many: dict) -> tuple[float, str]:
    """The largest difference between two checkpoints' floating-point model tensors (weights
    and normaliser statistics, counts included), relative to the tensor's largest magnitude,
    and where."""
    worst, where = 0.0, ""
    for key, a in one["model"].items():
        b = many["model"][key]
        assert a.shape == b.shape, key
        if not a.dtype.is_floating_point:
            continue
        error = float((a - b).abs().max()) / max(float(a.abs().max()), 1e-12)
        if error > worst:
            worst, where = error, key
    return worst, where


def _lrs(state: dict) -> list[float]:
    return [group["lr"] for group in state["optimizer"]["param_groups"]]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory):
    """Each (task, backend)'s one-process run, trained once for the module."""
    runs: dict[tuple[str, str], dict] = {}

    def get(task: str, backend: str) -> dict:
        if (task, backend) not in runs:
            folder = tmp_path_factory.mktemp(f"one_{task}_{backend}")
            runs[task, backend] = _trained(folder, task, backend, 1)
        return runs[task, backend]

    return get


@pytest.mark.parametrize(
    ("task", "backend", "gmis"),
    [
        ("Cartpole", "mujoco", 2),
        ("Cartpole", "mujoco", 3),
        ("Cartpole", "mjx", 2),
        ("Ant", "mujoco", 3),
    ],
)
def test_same_data_gmis_train_what_one_process_trains(tmp_path, one_process, task, backend, gmis):
    one, many = one_process(task, backend), _trained(tmp_path, task, backend, gmis)
    worst, where = _worst(one, many)
    assert worst < TOLERANCE, (worst, where)
    assert _lrs(many) == pytest.approx(_lrs(one), rel=TOLERANCE)
    assert one["frame"] * gmis == many["frame"]  # every GMI stepped its own copy of the envs
    assert torch.equal(
        one["model"]["running_mean_std.count"], many["model"]["running_mean_std.count"]
    )


def test_same_data_finds_a_sum_where_the_mean_belongs(tmp_path, one_process):
    """The same run with every GMI's gradients multiplied by the number of GMIs in epoch 1: the
    replicas stay identical (the run ends normally), the weights do not match one process's."""
    wrong = _trained(tmp_path, "Cartpole", "mujoco", 2, env={FAULT_ENV: "*:sum:1"})
    worst, _ = _worst(one_process("Cartpole", "mujoco"), wrong)
    assert worst > 100 * TOLERANCE, worst
