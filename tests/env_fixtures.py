"""Shared helpers for tests that build envs: plain task configs and a session-wide env cache.

MJX compiles its fused step once per env (10-20 s on a small CPU), so envs are built once per
session and shared between test files; a test that needs a clean episode calls ``restart``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask

CFG_DIR = Path(__file__).resolve().parents[1] / "cfg" / "task"
NUM_ENVS = 4


def load_task_cfg(name: str, num_envs: int = NUM_ENVS, **env_overrides: Any) -> dict[str, Any]:
    """cfg/task/<name>.yaml as a plain dict; ``env.numEnvs`` (a Hydra interpolation) replaced."""
    cfg = yaml.safe_load((CFG_DIR / f"{name}.yaml").read_text())
    cfg["env"]["numEnvs"] = num_envs
    cfg["env"].update(env_overrides)
    return cfg


@pytest.fixture(scope="session")
def task_cfg() -> Callable[..., dict[str, Any]]:
    """``task_cfg(name, num_envs=4, **env_overrides)`` -> a plain task config dict."""
    return load_task_cfg


EnvFactory = Callable[..., VecTask]


@pytest.fixture(scope="session")
def shared_env() -> Iterator[EnvFactory]:
    """``shared_env(task, backend, **env_overrides)`` -> a cached 4-env VecTask on the CPU.

    Callers must not rely on the env's history: use :func:`restart` first.
    """
    cache: dict[tuple, VecTask] = {}

    def get(task: str, backend: str, **env_overrides: Any) -> VecTask:
        key = (task, backend, tuple(sorted(env_overrides.items())))
        if key not in cache:
            cfg = load_task_cfg(task, NUM_ENVS, **env_overrides)
            physics = PhysicsOptions(backend=backend, num_threads=1)
            cache[key] = VecTask(cfg, "cpu", "cpu", physics=physics, seed=0)
        return cache[key]

    yield get
    for env in cache.values():
        env.close()


def restart(env: VecTask) -> torch.Tensor:
    """Start every env of ``env`` afresh (episode counters, task buffers, seed-0 reset state).

    Returns the first observations (a copy).
    """
    obs = torch.from_dlpack(env.backend.reset()).clone()
    env.obs_buf = obs
    env.obs_dict["obs"] = obs
    return obs


@pytest.fixture(scope="session")
def restart_env() -> Callable[[VecTask], torch.Tensor]:
    return restart


def step_copy(env: VecTask, actions: np.ndarray | torch.Tensor):
    """env.step, with every returned tensor cloned (obs, rew, reset, extras)."""
    if isinstance(actions, np.ndarray):
        actions = torch.from_numpy(np.ascontiguousarray(actions, dtype=np.float32))
    obs_dict, rew, reset, extras = env.step(actions)
    return (
        {k: v.clone() for k, v in obs_dict.items()},
        rew.clone(),
        reset.clone(),
        {k: v.clone() for k, v in extras.items()},
    )


@pytest.fixture(scope="session")
def step_env() -> Callable[..., tuple]:
    return step_copy


def rollout(env: VecTask, actions: np.ndarray, state=None, allow_resets: bool = False):
    """Observations (T, N, num_obs), rewards (T, N) and resets (T, N) of ``actions`` (T, N, A),
    float64, after a restart (and loading ``state`` = (qpos, qvel) when given)."""
    restart(env)
    if state is not None:
        env.backend.set_physics_state(*state)
    obs, rew, resets = [], [], []
    for a in actions:
        o, r, reset, _ = step_copy(env, a)
        assert allow_resets or not reset.any(), "an episode ended inside the compared window"
        obs.append(o["obs"].numpy())
        rew.append(r.numpy())
        resets.append(reset.numpy())
    return np.stack(obs).astype(np.float64), np.stack(rew).astype(np.float64), np.stack(resets)
