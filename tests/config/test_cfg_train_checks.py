"""RunSettings.check_batch: PPO sizes checked against the number of environments, each size
checked first as a key of its own."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.config import ConfigError, RunSettings, divisors_near
from isaacgymenvs_gmi.config.task_env import TaskEnvSettings

_PPO = {"learning_rate": 3e-4, "gamma": 0.99, "tau": 0.95, "e_clip": 0.2, "critic_coef": 2}


@pytest.fixture
def run(tmp_path):
    """RunSettings of a train config with these sizes (and valid PPO numbers)."""

    def make(**config: object) -> RunSettings:
        sizes = {"horizon_length": 16, "minibatch_size": 8192, "mini_epochs": 8, **config}
        tree = {"train": {"params": {"config": {**_PPO, **sizes}}}, "train_dir": str(tmp_path)}
        return RunSettings.from_cfg(tree)

    return make


@pytest.mark.parametrize(
    "num_envs, config, num_agents, batch",
    [
        (512, {}, 1, 8192),
        (4096, {"minibatch_size": 32768, "mini_epochs": 4}, 1, 65536),
        (1024, {"minibatch_size": 4096}, 1, 16384),
        (256, {"minibatch_size": 8192}, 2, 8192),
        (64, {"minibatch_size": None, "minibatch_size_per_env": 4}, 1, 1024),
    ],
)
def test_valid(run, num_envs, config, num_agents, batch):
    assert run(**config).check_batch("Task", num_envs, num_agents=num_agents) == batch


def test_minibatch_must_divide_batch(run):
    with pytest.raises(ConfigError) as info:
        run(minibatch_size=32768).check_batch("Ant", 64)
    message = str(info.value)
    assert info.value.key == "train.params.config.minibatch_size"
    assert message.startswith("train.params.config.minibatch_size=32768:")
    assert "16 * 64 * 1 = 1024" in message
    assert "1024" in message.rsplit(":", 1)[1]


def test_suggestions_are_divisors_near_the_given_value(run):
    with pytest.raises(ConfigError) as info:
        run(minibatch_size=300).check_batch("Cartpole", 100)
    suggested = [int(x) for x in str(info.value).rsplit(":", 1)[1].split(",")]
    # batch = 16 * 100 = 1600; its six divisors closest to 300
    assert suggested == [80, 100, 160, 200, 320, 400]


def test_minibatch_per_env_error_names_that_key(run):
    with pytest.raises(ConfigError, match=r"^train\.params\.config\.minibatch_size_per_env=3:"):
        run(minibatch_size=None, minibatch_size_per_env=3).check_batch("Task", 10)


@pytest.mark.parametrize("num_envs", [0, -5, 1.5, True, "", "many", None])
def test_num_envs_must_be_positive_int(num_envs):
    with pytest.raises(ConfigError) as info:
        TaskEnvSettings.from_task_config({"env": {"numEnvs": num_envs}, "sim": {"dt": 0.01}})
    assert info.value.key == "task.env.numEnvs"
    assert "integer >= 1" in str(info.value)


@pytest.mark.parametrize(
    "config, key",
    [
        ({"horizon_length": 0}, "horizon_length"),
        ({"horizon_length": 2.5}, "horizon_length"),
        ({"mini_epochs": 0}, "mini_epochs"),
        ({"mini_epochs": -1}, "mini_epochs"),
        ({"minibatch_size": 0}, "minibatch_size"),
    ],
)
def test_sizes_must_be_positive_ints(run, config, key):
    with pytest.raises(ConfigError) as info:
        run(**config)
    assert info.value.key == f"train.params.config.{key}"


@pytest.mark.parametrize(
    "config, key",
    [({"minibatch_size": None}, "minibatch_size"), ({"mini_epochs": None}, "mini_epochs")],
)
def test_a_trainer_needs_its_sizes(run, config, key):
    with pytest.raises(ConfigError) as info:
        run(**config).check_batch("Task", 512)
    assert info.value.key == f"train.params.config.{key}"


def test_divisors_near():
    assert divisors_near(12, 5, 3) == [3, 4, 6]
    assert divisors_near(1024, 32768, 3) == [256, 512, 1024]
    assert divisors_near(7, 1, 10) == [1, 7]


@pytest.mark.parametrize("task", ["Cartpole", "Ant"])
def test_shipped_configs_are_consistent(compose_cfg, task):
    cfg = compose_cfg(f"task={task}")
    batch = RunSettings.from_cfg(cfg).check_batch(cfg.task_name, cfg.task.env.numEnvs)
    assert batch == 16 * cfg.task.env.numEnvs


def test_small_num_envs_with_shipped_minibatch_is_reported(compose_cfg):
    cfg = compose_cfg("task=Ant", "num_envs=64")
    with pytest.raises(ConfigError, match="minibatch_size=32768"):
        RunSettings.from_cfg(cfg).check_batch(cfg.task_name, cfg.task.env.numEnvs)
