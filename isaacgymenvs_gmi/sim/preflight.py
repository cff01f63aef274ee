"""Check a task config the way a GMI will use it, short of creating a simulator.

:func:`preflight_task` reads the timing keys, compiles the task's model (a few ms; no ``MjData``,
nothing stepped) and builds the task's rules, recording every ``task.env`` key they read. A
missing key, a non-number where the bundled task file has a number, a missing model file: each
is a :class:`~isaacgymenvs_gmi.config.ConfigError` naming the key, before any process starts.
The rules' JAX arrays are traced, not made, where the task allows it, so the launcher does not
start JAX's backend (its thread pools would keep it from forking GMIs).
"""

from __future__ import annotations

import contextlib
import numbers
from dataclasses import dataclass
from typing import Any

import mujoco

from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.config.randomization import RandomizationSettings
from isaacgymenvs_gmi.config.task_env import SimTiming, TaskEnvSettings, asset_file_of
from isaacgymenvs_gmi.tasks.base import ModelInfo, TaskConfigError, TaskLogic

from .model import AssetLoadError, AssetNotFoundError, compile_task_model
from .world_params import resolve_targets


@dataclass(frozen=True)
class TaskFootprint:
    """Sizes of one env of a task, for memory estimates: tensor widths and the float64 values
    MuJoCo keeps per world (``mj_stateSize``)."""

    num_obs: int
    num_states: int
    num_actions: int
    physics_state_values: int
    env_keys_read: frozenset[str] = frozenset()  # task.env keys the task and runtime read


class _Reads(dict):
    """``task.env`` that remembers which keys the task read."""

    def __init__(self, values: dict[str, Any]):
        super().__init__(values)
        self.read: list[str] = []

    def __getitem__(self, key):
        self.read.append(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.append(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.append(key)
        return super().__contains__(key)


def preflight_task(
    task_cls: type[TaskLogic],
    task_config: dict[str, Any],
    assets_root: str | None,
    defaults: dict[str, Any] | None = None,
    randomization: RandomizationSettings | None = None,
) -> TaskFootprint:
    """Check ``task_config`` (the resolved ``task`` node) for ``task_cls``; return its sizes.

    ``defaults``: the bundled task file's ``env``; a key read whose default is a number must be
    one here too. ``randomization``: its actors must be the task's."""
    SimTiming.from_task_config(task_config)  # dt required, steps positive, or refused
    env = _Reads(task_config.get("env") or {})
    watched = {**task_config, "env": env}  # every read of task.env below is recorded
    with contextlib.suppress(TaskConfigError):  # refused, naming the key, when the run is planned
        task_cls.check_config(env)
    with contextlib.suppress(ConfigError):  # refused, naming the key, when the run is planned
        TaskEnvSettings.from_task_config(watched)
    try:
        model, timing = compile_task_model(task_cls, watched, assets_root)
    except AssetNotFoundError as err:
        raise ConfigError("assets_root", assets_root, str(err).split(": ", 1)[-1]) from None
    except AssetLoadError as err:
        name = asset_file_of(task_config)
        raise ConfigError("task.env.asset.assetFileName", name, str(err)) from None
    except TaskConfigError as err:
        raise ConfigError(f"task.env.{err.key}", err.value, err.constraint) from None
    if randomization is not None:
        resolve_targets(randomization, model, task_cls.actors)  # refused naming the actor
    try:
        sizes = _task_sizes(task_cls, env, timing.dt, ModelInfo.from_model(model))
    except KeyError as err:
        key = err.args[0] if err.args else "?"
        raise ConfigError(
            f"task.env.{key}", None, f"missing: {task_cls.name} reads it (see its task file)"
        ) from None
    except (TypeError, ValueError) as err:
        raise _value_error(env, defaults or {}, err) from None
    _check_numbers(env, defaults or {})
    return TaskFootprint(
        *sizes,
        physics_state_values=int(mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)),
        env_keys_read=frozenset(env.read),
    )


def _task_sizes(
    task_cls: type[TaskLogic], env: dict, dt: float, info: ModelInfo
) -> tuple[int, int, int]:
    """(num_obs, num_states, num_actions) of the task built with ``env``, traced (no JAX
    backend started) where its constructor allows it."""
    import jax

    def build() -> tuple[int, int, int]:
        task = task_cls(env, dt, info)
        return int(task.num_obs), int(task.num_states), int(task.num_actions)

    sizes: list[tuple[int, int, int]] = []
    try:
        jax.make_jaxpr(lambda: sizes.append(build()) or ())()
    except jax.errors.JAXTypeError:  # it needs concrete values (a TypeError: caught first)
        return build()
    return sizes[0]


def _check_numbers(env: _Reads, defaults: dict[str, Any]) -> None:
    for key in dict.fromkeys(env.read):
        default, value = defaults.get(key), dict.get(env, key)
        wants_number = isinstance(default, numbers.Real) and not isinstance(default, bool)
        is_number = isinstance(value, numbers.Real) and not isinstance(value, bool)
        if wants_number and key in env and not is_number:
            raise ConfigError(f"task.env.{key}", value, "must be a number")


def _value_error(env: _Reads, defaults: dict[str, Any], err: Exception) -> ConfigError:
    """The key behind a task's failure to use a value (the last one read), as a ConfigError."""
    try:
        _check_numbers(env, defaults)
    except ConfigError as named:
        return named
    key = env.read[-1] if env.read else "?"
    return ConfigError(f"task.env.{key}", dict.get(env, key), f"not usable: {err}")
