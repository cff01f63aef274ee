"""Up-front checks of the rl-games PPO settings against the number of environments.

rl-games collects ``batch = horizon_length * num_actors * num_agents`` transitions per epoch
and splits them into minibatches of ``minibatch_size`` (or ``minibatch_size_per_env *
num_actors``); it stops with an assertion deep inside agent construction when the batch is not
a multiple of the minibatch. These checks report the same problems before any process starts,
naming the config key and suggesting values that work.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ._values import to_plain
from .errors import ConfigError
from .schema import Int

_PREFIX = "train.params.config"
_SUGGESTIONS = 6


def validate_train_config(
    task_name: str,
    num_envs: Any,
    train_params: Mapping[str, Any],
    *,
    num_agents: int = 1,
) -> int:
    """Check the PPO sizes of one training process; return its rl-games batch size.

    Args:
        task_name: used in error messages only.
        num_envs: environments (rl-games actors) in this process, i.e. ``task.env.numEnvs``.
        train_params: ``train.params`` (with its ``config`` section); the ``config`` section
            itself is accepted too.
        num_agents: agents per environment (rl-games' ``env_info['agents']``).

    Raises:
        ConfigError: naming ``task.env.numEnvs`` or the ``train.params.config`` key at fault.
    """
    actors = _num_envs(task_name, num_envs)
    config = _config_section(train_params)

    horizon = Int(1).check(f"{_PREFIX}.horizon_length", config.get("horizon_length"))
    Int(1).check(f"{_PREFIX}.mini_epochs", config.get("mini_epochs"))
    batch = horizon * actors * num_agents

    if config.get("minibatch_size") is not None:
        key = f"{_PREFIX}.minibatch_size"
        given = minibatch = Int(1).check(key, config["minibatch_size"])
    elif config.get("minibatch_size_per_env") is not None:
        key = f"{_PREFIX}.minibatch_size_per_env"
        given = Int(1).check(key, config["minibatch_size_per_env"])
        minibatch = given * actors
    else:
        raise ConfigError(
            f"{_PREFIX}.minibatch_size",
            None,
            "missing; set minibatch_size or minibatch_size_per_env",
        )

    if batch % minibatch != 0:
        near = ", ".join(str(d) for d in divisors_near(batch, minibatch, _SUGGESTIONS))
        raise ConfigError(
            key,
            given,
            f"{task_name}: the minibatch ({minibatch}) must divide the rl-games batch "
            f"horizon_length * num_actors * num_agents = {horizon} * {actors} * {num_agents} "
            f"= {batch}; minibatch sizes that divide {batch} near {minibatch}: {near}",
        )
    return batch


def divisors_near(n: int, target: int, count: int) -> list[int]:
    """The ``count`` divisors of ``n`` closest to ``target``, in increasing order."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    divisors = sorted(set(small + [n // d for d in small]))
    closest = sorted(divisors, key=lambda d: (abs(d - target), d))[:count]
    return sorted(closest)


def _num_envs(task_name: str, value: Any) -> int:
    try:
        return Int(1).check("task.env.numEnvs", value)
    except ConfigError as err:
        raise ConfigError(
            "task.env.numEnvs",
            value,
            f"{task_name}: the number of environments (num_envs) {err.constraint}",
        ) from None


def _config_section(train_params: Mapping[str, Any]) -> dict[str, Any]:
    params = to_plain(train_params)
    if not isinstance(params, Mapping):
        raise ConfigError("train.params", params, "must be a mapping")
    section = params.get("config", params)
    if not isinstance(section, Mapping):
        raise ConfigError(_PREFIX, section, "must be a mapping")
    return dict(section)
