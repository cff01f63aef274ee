"""validate_train_config: PPO sizes checked against the number of environments."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.config import ConfigError, divisors_near, validate_train_config


def _params(**config: object) -> dict[str, object]:
    base: dict[str, object] = {"horizon_length": 16, "minibatch_size": 8192, "mini_epochs": 8}
    base.update(config)
    return {"config": base}


@pytest.mark.parametrize(
    "num_envs, config, num_agents, batch",
    [
        (512, {}, 1, 8192),
        (4096, {"minibatch_size": 32768, "mini_epochs": 4}, 1, 65536),
        (1024, {"minibatch_size": 4096}, 1, 16384),
        ("64", {"minibatch_size": 512}, 1, 1024),
        (256, {"minibatch_size": 8192}, 2, 8192),
        (64, {"minibatch_size": None, "minibatch_size_per_env": 4}, 1, 1024),
    ],
)
def test_valid(num_envs, config, num_agents, batch):
    params = _params(**config)
    assert validate_train_config("Task", num_envs, params, num_agents=num_agents) == batch


def test_accepts_config_section_itself():
    assert validate_train_config("Task", 512, _params()["config"]) == 8192


def test_minibatch_must_divide_batch():
    with pytest.raises(ConfigError) as info:
        validate_train_config("Ant", 64, _params(minibatch_size=32768))
    message = str(info.value)
    assert info.value.key == "train.params.config.minibatch_size"
    assert message.startswith("train.params.config.minibatch_size=32768:")
    assert "16 * 64 * 1 = 1024" in message
    assert "1024" in message.rsplit(":", 1)[1]


def test_suggestions_are_divisors_near_the_given_value():
    with pytest.raises(ConfigError) as info:
        validate_train_config("Cartpole", 100, _params(minibatch_size=300))
    suggested = [int(x) for x in str(info.value).rsplit(":", 1)[1].split(",")]
    # batch = 16 * 100 = 1600; its six divisors closest to 300
    assert suggested == [80, 100, 160, 200, 320, 400]


def test_minibatch_per_env_error_names_that_key():
    with pytest.raises(ConfigError, match=r"^train\.params\.config\.minibatch_size_per_env=3:"):
        validate_train_config("Task", 10, _params(minibatch_size=None, minibatch_size_per_env=3))


@pytest.mark.parametrize("num_envs", [0, -5, 1.5, True, "", "many", None])
def test_num_envs_must_be_positive_int(num_envs):
    with pytest.raises(ConfigError) as info:
        validate_train_config("Ant", num_envs, _params())
    assert info.value.key == "task.env.numEnvs"
    assert "num_envs" in str(info.value)
    assert "integer >= 1" in str(info.value)


@pytest.mark.parametrize(
    "config, key",
    [
        ({"horizon_length": 0}, "horizon_length"),
        ({"horizon_length": 2.5}, "horizon_length"),
        ({"mini_epochs": 0}, "mini_epochs"),
        ({"mini_epochs": -1}, "mini_epochs"),
        ({"minibatch_size": 0}, "minibatch_size"),
        ({"minibatch_size": None}, "minibatch_size"),
    ],
)
def test_sizes_must_be_positive_ints(config, key):
    with pytest.raises(ConfigError) as info:
        validate_train_config("Task", 512, _params(**config))
    assert info.value.key == f"train.params.config.{key}"


def test_divisors_near():
    assert divisors_near(12, 5, 3) == [3, 4, 6]
    assert divisors_near(1024, 32768, 3) == [256, 512, 1024]
    assert divisors_near(7, 1, 10) == [1, 7]


@pytest.mark.parametrize("task", ["Cartpole", "Ant"])
def test_shipped_configs_are_consistent(compose_cfg, task):
    cfg = compose_cfg(f"task={task}")
    batch = validate_train_config(cfg.task_name, cfg.task.env.numEnvs, cfg.train.params)
    assert batch == 16 * cfg.task.env.numEnvs


def test_small_num_envs_with_shipped_minibatch_is_reported(compose_cfg):
    cfg = compose_cfg("task=Ant", "num_envs=64")
    with pytest.raises(ConfigError, match="minibatch_size=32768"):
        validate_train_config(cfg.task_name, cfg.task.env.numEnvs, cfg.train.params)
