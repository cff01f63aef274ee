"""wandb as IsaacGymEnvs uses it, in wandb's offline mode (nothing leaves the machine): one run,
GMI 0's, with the TensorBoard scalars (the episode reward among them) and the run's config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config import wandb as wandb_config
from isaacgymenvs_gmi.config.wandb import WandbSettings
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.sim.render import renderer_problem
from tests.helpers import assert_ok, run_train

ROOT = Path(__file__).resolve().parents[2]


def test_off_by_default_and_validated(compose_cfg, monkeypatch):
    assert WandbSettings.from_cfg(compose_cfg("task=Cartpole")) == WandbSettings()
    monkeypatch.setattr(wandb_config, "wandb_installed", lambda: True)
    on = compose_cfg("task=Cartpole", "wandb_activate=True", "wandb_tags=[x,y]")
    settings = WandbSettings.from_cfg(on)
    assert settings.activate and settings.tags == ("x", "y") and settings.name == "Cartpole"
    bad = compose_cfg("task=Cartpole", "wandb_activate=True", "wandb_logcode_dir=/no/such/dir")
    with pytest.raises(ConfigError, match=r"^wandb_logcode_dir='/no/such/dir': is not a folder"):
        WandbSettings.from_cfg(bad)


def test_without_the_package_it_is_refused_before_start(compose_cfg, monkeypatch):
    monkeypatch.setattr(wandb_config, "wandb_installed", lambda: False)
    cfg = compose_cfg("task=Cartpole", "wandb_activate=True")
    with pytest.raises(ConfigError, match=r"^wandb_activate=True: needs the wandb package: pip"):
        plan_run(cfg)


# where MuJoCo can render headless, the sync run records videos too
RENDERS = renderer_problem() is None
VIDEO = ["capture_video=True", "capture_video_freq=40", "capture_video_len=8"] if RENDERS else []


@pytest.mark.skipif(not wandb_config.wandb_installed(), reason="the wandb extra is not installed")
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_offline_run_writes_the_reward_and_the_config(tmp_path, mode):
    iterations = 6 if mode == "sync" else 30
    proc = run_train(
        *["task=Cartpole", "gmi.per_gpu=2", f"gmi.mode={mode}", f"max_iterations={iterations}"],
        *[f"train_dir={tmp_path}", "wandb_activate=True", "wandb_group=grp-7"],
        *["wandb_tags=[gmi-test]", "wandb_project=gmi-tests"],
        *(VIDEO if mode == "sync" else []),
        env={"WANDB_MODE": "offline", "WANDB_SILENT": "true"},
        timeout_s=600,
    )
    assert_ok(proc)
    (run,) = (tmp_path / "wandb").glob("offline-run-*")  # one run: GMI 0's (the lead trainer)
    config = yaml.safe_load((run / "files" / "isaacgymenvs_gmi_config.yaml").read_text())
    assert config["task_name"] == "Cartpole" and config["gmi"]["per_gpu"] == 2
    (log,) = run.glob("run-*.wandb")  # wandb's transaction log: history, config, run record
    records = log.read_bytes()
    for expected in (b"episode/reward", b"grp-7", b"gmi-tests", b"gmi-test", b"per_gpu"):
        assert expected in records, expected
    if mode == "sync" and RENDERS:  # the videos reach the run: 96 steps, from 0, 40, 80
        assert len(list(run.glob("files/media/videos/*.mp4"))) == 3
