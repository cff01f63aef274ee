"""The Python entry points: ``make`` (IsaacGymEnvs' ``make`` call shape) and ``run`` (a composed
config run as ``train.py`` runs it), for pipelines with their own ``train.py``."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch

import isaacgymenvs_gmi
from isaacgymenvs_gmi.config import ConfigError

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "pendulum"


def test_make_has_isaacgymenvs_call_shape():
    params = list(inspect.signature(isaacgymenvs_gmi.make).parameters)
    assert params[:11] == [
        "seed",
        "task",
        "num_envs",
        "sim_device",
        "rl_device",
        "graphics_device_id",
        "headless",
        "multi_gpu",
        "virtual_screen_capture",
        "force_render",
        "cfg",
    ]


def test_make_takes_the_task_from_a_composed_cfg():
    cfg = isaacgymenvs_gmi.compose_config("task=Cartpole", "task.env.maxEffort=10.0")
    env = isaacgymenvs_gmi.make(3, "Cartpole", 6, "cpu", "cpu", cfg=cfg)
    assert cfg.num_envs == "" and cfg.seed == 42  # the caller's config is left as it was
    try:
        assert env.num_envs == 6 and env.cfg["env"]["maxEffort"] == 10.0
        obs_dict, rew, reset, _ = env.step(torch.zeros(6, 1))
        assert obs_dict["obs"].shape == (6, 4) and rew.shape == (6,) and reset.shape == (6,)
    finally:
        env.close()


def test_make_builds_a_users_task_through_overrides(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    env = isaacgymenvs_gmi.make(
        0,
        "Pendulum",
        5,
        "cpu",
        "cpu",
        overrides=[f"hydra.searchpath=[file://{EXAMPLE / 'cfg'}]", "task_modules=[pendulum_task]"],
    )
    try:
        assert (env.num_envs, env.num_obs, env.num_actions) == (5, 3, 1)
    finally:
        env.close()


def test_make_is_seeded():
    first = [isaacgymenvs_gmi.make(7, "Cartpole", 4, "cpu", "cpu") for _ in range(2)]
    try:
        torch.testing.assert_close(first[0].reset()["obs"], first[1].reset()["obs"])
    finally:
        for env in first:
            env.close()


def test_run_trains_a_composed_config_under_two_gmis(tmp_path):
    cfg = isaacgymenvs_gmi.compose_config(
        "task=Cartpole", "gmi.per_gpu=2", "max_iterations=2", f"train_dir={tmp_path}"
    )
    result = isaacgymenvs_gmi.run(cfg)
    assert result is not None and result.frames == 2 * 2 * 512 * 16  # epochs x GMIs x envs x T
    assert result.checkpoint and Path(result.checkpoint).is_file()


def test_run_refuses_bad_input_before_anything_starts(tmp_path):
    cfg = isaacgymenvs_gmi.compose_config("task=Cartpole", "gmi.per_gpu=0")
    with pytest.raises(ConfigError, match=r"^gmi.per_gpu=0: "):
        isaacgymenvs_gmi.run(cfg)
