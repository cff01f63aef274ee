"""No upstream switch is dropped silently: every top-level key of IsaacGymEnvs' config.yaml and
every ``pbt.*`` key is honoured, refused naming the key, or named once with what runs instead
(``pbt.*`` itself: tests/config/test_cfg_pbt.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.ignored import TOP_LEVEL_KEYS
from isaacgymenvs_gmi.config.pbt import PBT_KEYS
from isaacgymenvs_gmi.config.upstream_switches import HONOURED, NAMED, not_applied, pbt_enabled
from tests.helpers import assert_ok, run_train

ROOT = Path(__file__).resolve().parents[2]
# IsaacGymEnvs' cfg/config.yaml, top level (its defaults list aside)
UPSTREAM_KEYS = [
    "task_name",
    "experiment",
    "num_envs",
    "seed",
    "torch_deterministic",
    "max_iterations",
    "physics_engine",
    "pipeline",
    "sim_device",
    "rl_device",
    "graphics_device_id",
    "num_threads",
    "solver_type",
    "num_subscenes",
    "test",
    "checkpoint",
    "sigma",
    "multi_gpu",
    "wandb_activate",
    "wandb_group",
    "wandb_name",
    "wandb_entity",
    "wandb_project",
    "wandb_tags",
    "wandb_logcode_dir",
    "capture_video",
    "capture_video_freq",
    "capture_video_len",
    "force_render",
    "headless",
]
# IsaacGymEnvs' cfg/pbt/pbt_default.yaml
UPSTREAM_PBT_KEYS = [
    "enabled",
    "policy_idx",
    "num_policies",
    "workspace",
    "interval_steps",
    "dbg_mode",
    "start_after",
    "initial_delay",
    "replace_fraction_worst",
    "replace_fraction_best",
    "replace_threshold_frac_std",
    "replace_threshold_frac_absolute",
    "mutation_rate",
    "change_min",
    "change_max",
    "mutation",
]


@pytest.mark.parametrize("key", UPSTREAM_KEYS)
def test_every_upstream_top_level_key_is_handled(key):
    assert key in (*HONOURED, *TOP_LEVEL_KEYS, *NAMED)


def test_every_upstream_pbt_key_is_a_pbt_setting():
    assert sorted(UPSTREAM_PBT_KEYS) == sorted(PBT_KEYS)


def test_pbt_enabled_must_be_a_flag():
    assert pbt_enabled({"pbt": {"enabled": True}}) is True
    assert not pbt_enabled({"pbt": {"enabled": None}}) and not pbt_enabled({})
    with pytest.raises(ConfigError, match=r"^pbt\.enabled='yes please': must be true or false"):
        pbt_enabled({"pbt": {"enabled": "yes please"}})


def test_every_pbt_setting_is_named_when_pbt_is_off():
    pbt = {k: 1 for k in UPSTREAM_PBT_KEYS} | {"enabled": False, "policy_idx": 3}
    (line,) = not_applied({"headless": True, "pbt": pbt}, under_torchrun=False, gmis=1, devices=1)
    named = line.split(":")[0].split(", ")
    assert sorted(named) == sorted(f"pbt.{k}" for k in UPSTREAM_PBT_KEYS if k != "enabled")
    assert "population-based training is off" in line


def test_pbt_settings_are_not_named_when_pbt_is_on():
    pbt = {k: 1 for k in UPSTREAM_PBT_KEYS} | {"enabled": True, "policy_idx": 0}
    cfg = {"headless": True, "pbt": pbt}
    assert not_applied(cfg, under_torchrun=False, gmis=2, devices=1) == []


def test_quiet_for_a_config_that_asks_for_nothing_unsupported():
    cfg = {"headless": True, "multi_gpu": False, "pbt": {"enabled": False, "policy_idx": 0}}
    assert not_applied(cfg, under_torchrun=False, gmis=3, devices=1) == []


def test_multi_gpu_says_what_runs_instead():
    (line,) = not_applied({"multi_gpu": True}, under_torchrun=False, gmis=3, devices=1)
    assert line.startswith("multi_gpu=True without torchrun: this machine's 3 GMIs on 1 device")
    assert not_applied({"multi_gpu": True}, under_torchrun=True, gmis=4, devices=2) == []
    (line,) = not_applied({"multi_gpu": False}, under_torchrun=True, gmis=4, devices=2)
    assert line.startswith("multi_gpu=False under torchrun") and "4 GMIs on 2 devices" in line


def _train(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    tiny = ("num_envs=32", "train.params.config.minibatch_size=256")
    return run_train(
        "task=Cartpole", *tiny, f"train_dir={tmp_path / 'runs'}", *args, cwd=tmp_path, timeout_s=240
    )


def test_train_py_refuses_bad_pbt_settings_before_any_work(compose_cfg, train_py_refusal, tmp_path):
    tiny = ("num_envs=32", "train.params.config.minibatch_size=256")
    pbt = ("task=Cartpole", *tiny, f"train_dir={tmp_path / 'runs'}", "pbt=pbt_default")
    printed = train_py_refusal(compose_cfg(*pbt, "pbt.replace_fraction_worst=0"))
    # typed by the schema: the 0 given is the float 0.0
    assert "error: pbt.replace_fraction_worst=0.0: must be a number in (0, 1]" in printed
    assert not (tmp_path / "runs").exists()
    printed = train_py_refusal(compose_cfg(*pbt, "gmi.mode=serve"))
    assert "error: gmi.mode='serve': pbt.enabled=True runs as gmi.mode=pbt" in printed
    assert not (tmp_path / "runs").exists()


def test_a_run_names_headless_and_multi_gpu_once(tmp_path):
    proc = _train(tmp_path, "headless=False", "multi_gpu=True", "gmi.per_gpu=2", "max_iterations=1")
    assert_ok(proc)
    assert proc.stderr.count("headless=False: there is no viewer window") == 1
    assert proc.stderr.count("multi_gpu=True without torchrun: this machine's 2 GMIs") == 1
