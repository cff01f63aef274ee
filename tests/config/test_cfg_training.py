"""What the runtime reads of the training settings is typed once, at plan time."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.config import ConfigError, RunSettings
from isaacgymenvs_gmi.launch import plan_run

NO_GPU = (False, ("cpu",), False)


def test_defaults_follow_isaacgymenvs(compose_cfg):
    train = RunSettings.from_cfg(compose_cfg("task=Ant")).train()
    assert train.horizon_length == 16
    assert train.torch_deterministic is False
    assert train.sigma is None  # sigma: '' keeps the network's
    assert train.central_value is False
    assert train.experiment_name is None and train.train_dir == "runs"


def test_values_given_on_the_command_line(compose_cfg, tmp_path):
    cfg = compose_cfg(
        "task=Cartpole",
        "sigma=0.5",
        "torch_deterministic=True",
        "train.params.config.horizon_length=32",
        f"train_dir={tmp_path}",
        "+full_experiment_name=mine",
        "+train.params.config.central_value_config={}",
    )
    train = RunSettings.from_cfg(cfg).train()
    assert (train.sigma, train.torch_deterministic, train.horizon_length) == (0.5, True, 32)
    assert train.central_value and train.experiment_name == "mine"
    assert train.train_dir == str(tmp_path)


def test_a_sigma_that_is_no_number_is_refused_naming_the_key(compose_cfg):
    with pytest.raises(ConfigError, match="sigma='abc'"):
        plan_run(compose_cfg("task=Cartpole", "sigma=abc"), platform=NO_GPU)


def test_the_plan_carries_typed_settings_and_the_resolved_configs(compose_cfg):
    cfg = compose_cfg(
        "task=Cartpole", "num_envs=64", "train.params.config.minibatch_size=512", "seed=7"
    )
    plan = plan_run(cfg, platform=NO_GPU)
    assert plan.train.horizon_length == 16
    assert plan.task_config["env"]["numEnvs"] == 64 == plan.num_envs
    assert plan.train_params["config"]["horizon_length"] == 16
    assert plan.train_params["seed"] == 7  # resolved, not an interpolation
