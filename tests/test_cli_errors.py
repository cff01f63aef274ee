"""Bad input fails with a clear error naming the key, before any simulation or process starts.
``train.py`` runs as a process once per way a refusal reaches the user (Hydra's refusal of the
command line, a config refused before anything starts); the rest is checked in process."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.compose import compose_config as compose_like_train_py
from isaacgymenvs_gmi.config.suggest import suggestions
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.tasks import Cartpole
from isaacgymenvs_gmi.tasks.base import TaskConfigError
from tests.helpers import run_train

ROOT = Path(__file__).resolve().parents[1]
NO_GPU = (False, ("cpu",), False)  # (cuda available, JAX platforms, warp installed)

BAD = [
    (["task=Cartpole", "num_envs=0"], "numEnvs"),
    (["task=Cartpole", "num_envs=-8"], "numEnvs"),
    (["task=Cartpole", "train.params.config.minibatch_size=1000"], "minibatch_size"),
    (["task=Cartpole", "gmi.per_gpu=0"], "gmi.per_gpu"),
    (["task=Cartpole", "gmi.per_gpu=-2"], "gmi.per_gpu"),
    (["task=Cartpole", "gmi.per_gpu=1.5"], "gmi.per_gpu"),
    (["task=Cartpole", "gmi.per_gpu=abc"], "gmi.per_gpu"),
    (["task=Cartpole", "gmi.backend=cuda"], "gmi.backend"),
    (["task=Cartpole", "gmi.comm=ring"], "gmi.comm"),
    (["task=Cartpole", "gmi.per_gpu=2", "gmi.comm=mrr"], "gmi.comm"),  # MRR needs t <= g
    (["task=Cartpole", "gmi.per_gpu=2", "gmi.intra_device=ipc"], "gmi.intra_device"),  # no GPU
    (["task=Cartpole", "sim_backend=physx"], "sim_backend"),
    (["task=Cartpole", "mjx_impl=warp", "sim_backend=mjx"], "mjx_impl"),
    (["task=Cartpole", "sim_device=tpu"], "sim_device"),
    (["task=Cartpole", "test=True"], "checkpoint"),
    (["task=Cartpole", "checkpoint=/nonexistent/model.pth"], "checkpoint"),
    (["task=ShadowHand", "task.env.observationType=pixels"], "task.env.observationType"),
    (["task=FrankaCabinet", "task.env.startPositionNoise=0.1"], "task.env.startPositionNoise"),
]


@pytest.mark.parametrize("overrides,key", BAD, ids=[" ".join(o[1:]) for o, _ in BAD])
def test_plan_rejects_bad_input_naming_the_key(compose_cfg, overrides, key):
    cfg = compose_cfg(*overrides)
    with pytest.raises(ConfigError) as err:
        plan_run(cfg, platform=NO_GPU)
    assert key in str(err.value)


def test_mjx_on_a_gpu_device_needs_a_jax_gpu(compose_cfg):
    cfg = compose_cfg("task=Cartpole", "sim_backend=mjx")
    with pytest.raises(ConfigError, match="sim_backend"):
        plan_run(cfg, platform=(True, ("cpu",), False))  # CUDA for torch, none for JAX


def test_task_settings_are_checked_by_the_task_at_plan_time(compose_cfg, monkeypatch):
    def refuse(env_cfg):
        raise TaskConfigError("resetDist", env_cfg["resetDist"], "must be positive")

    monkeypatch.setattr(Cartpole, "check_config", staticmethod(refuse))
    cfg = compose_cfg("task=Cartpole", "task.env.resetDist=-1")
    with pytest.raises(ConfigError, match=r"task.env.resetDist=-1: must be positive"):
        plan_run(cfg, platform=NO_GPU)


def test_unknown_gmi_key_is_refused(compose_cfg):
    cfg = compose_cfg("task=Cartpole", "+gmi.per_gpus=2")
    with pytest.raises(ConfigError, match="per_gpus"):
        plan_run(cfg, platform=NO_GPU)


def _train(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return run_train(*args, f"train_dir={tmp_path / 'runs'}", timeout_s=120)


def test_cli_unknown_task_lists_available_tasks(tmp_path):
    proc = _train("task=Humanoidz", "gmi.per_gppu=2", tmp_path=tmp_path)
    assert proc.returncode != 0
    assert "Ant" in proc.stderr and "Cartpole" in proc.stderr
    assert "did you mean task=Humanoid? (task=Humanoidz is not known)" in proc.stderr
    assert "did you mean gmi.per_gpu? (gmi.per_gppu is not known)" in proc.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["task=Ant", "max_iteration=3"], "did you mean max_iterations?"),
        (["task=Ant", "train.params.config.learning_rat=3"], "train.params.config.learning_rate?"),
        (["task=Cartpol", "train=CartpolPPO"], "task=Cartpole? (task=Cartpol"),
        (["task=Ant", "task.env.numEnv=3"], "did you mean task.env.numEnvs?"),
    ],
)
def test_a_typo_gets_the_closest_names(args, says):
    found = suggestions(args)
    assert any(says in line for line in found), found


def test_nothing_is_suggested_for_a_good_command_line_or_a_value():
    assert suggestions(["task=Ant", "gmi.per_gpu=3", "+extra.key=1"]) == []
    assert suggestions(["task=Zzzzzz"]) == []  # nothing close: Hydra's list says it all


def test_cli_task_config_without_task_class_lists_available(tmp_path, train_py_refusal):
    (tmp_path / "cfg" / "task").mkdir(parents=True)
    (tmp_path / "cfg" / "task" / "Walker.yaml").write_text("name: Walker\nenv:\n  numEnvs: 16\n")
    cfg = compose_like_train_py(
        "task=Walker",
        "train=CartpolePPO",
        f"hydra.searchpath=[file://{tmp_path / 'cfg'}]",
        f"train_dir={tmp_path / 'runs'}",
    )
    printed = train_py_refusal(cfg)
    assert "task='Walker'" in printed
    assert "available: Ant, Anymal, BallBalance, Cartpole, FrankaCabinet" in printed
    assert not (tmp_path / "runs").exists()


def test_cli_bad_value_exits_2_before_any_work(tmp_path):
    """The one run of ``train.py`` for a config refused before anything starts: one error line,
    exit code 2, no GMI and no run folder. The other refusals are found in process, through the
    call ``train.py`` makes (the ``train_py_refusal`` fixture)."""
    proc = _train("task=Cartpole", "gmi.per_gpu=0", tmp_path=tmp_path)
    assert proc.returncode == 2
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: gmi.per_gpu="), proc.stderr[-2000:]
    assert "gmi.per_gpu=0" in proc.stderr and ">= 1" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not re.search(r"^GMI \d+: ", proc.stdout, re.M), proc.stdout[-2000:]
    assert not (tmp_path / "runs").exists()
