"""gmi.mode=serve end to end: a trained checkpoint served on 3 real GMI processes reports
predictions/s and its reward, and its recording loads back with the manifest's counts; the
initial policy serves in one process; bad serving input is refused before start."""

from __future__ import annotations

import re

import numpy as np
import pytest

from isaacgymenvs_gmi.channels.recording import load_gmi, load_recording
from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.launch import plan_run, run
from tests.gmi.launched_run import LaunchedRun

NO_GPU = (False, ("cpu",), False)
SUMMARY = re.compile(
    r"served ([\d,]+) predictions on (\d+) GMI\(s\) x (\d+) envs \| PPS ([\d,]+) .* \| "
    r"episodes ([\d,]+) \| mean reward (-?[\d.]+)"
)


def test_a_checkpoint_served_on_three_gmis_reports_pps_reward_and_records(
    trained_cartpole, tmp_path
):
    record = tmp_path / "recording"
    served = LaunchedRun(
        tmp_path,
        "task=Cartpole",
        "gmi.per_gpu=3",
        "gmi.mode=serve",
        f"checkpoint={trained_cartpole}",
        "num_envs=64",
        "serve.steps=520",  # beyond one episode (500 steps): every env finishes one
        f"serve.record={record}",
    )
    assert served.finish(300) == 0, served.text("err")[-3000:]
    out = served.text("out") + served.text("err")
    found = SUMMARY.search(out)
    assert found, out[-3000:]
    predictions, gmis, envs, pps = (int(x.replace(",", "")) for x in found.groups()[:4])
    steps = 528  # 520 in whole chunks of 16
    assert (predictions, gmis, envs) == (steps * 3 * 64, 3, 64) and pps > 0
    assert float(found.group(6)) > 400  # the checkpoint balances the pole
    assert f"produced {predictions:,} = taken {predictions:,}" in out
    assert served.leftovers() == []

    recording = load_recording(str(record))
    manifest = recording.manifest
    assert manifest["transitions"] == recording.transitions() == predictions
    assert [p["gmi"] for p in manifest["gmis"]] == [0, 1, 2]
    assert recording.arrays["obs"].shape == (steps, 3 * 64, 4)
    assert recording.arrays["actions"].shape == (steps, 3 * 64, 1)
    assert recording.arrays["terminated"].dtype == np.bool_
    version = manifest["policy_version"]
    assert version["min"] == version["max"] == 60  # the checkpoint's epoch
    assert (recording.arrays["version"] == 60).all()
    gmi1 = load_gmi(str(record), 1, ["rewards"])["rewards"]
    assert np.array_equal(gmi1, recording.arrays["rewards"][:, 64:128])
    # a balancing policy: nearly every step earns close to the full reward
    assert recording.arrays["rewards"].mean() > 0.9


def test_the_initial_policy_serves_in_one_process(compose_cfg, tmp_path):
    cfg = compose_cfg(
        "task=Cartpole",
        "gmi.mode=serve",
        "serve.steps=100",
        "sim_device=cpu",
        "rl_device=cpu",
        f"train_dir={tmp_path}",
    )
    result = run(cfg, plan_run(cfg, platform=NO_GPU))
    assert result.frames == 112 * 512  # 100 steps, in whole chunks of 16
    assert result.rates["pps"] > 0
    assert result.mean_reward is not None and result.mean_reward < 100  # untrained: falls fast
    assert not list(tmp_path.iterdir())  # serving writes no run folder


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("serve.steps=0", "serve.steps"),
        ("serve.record=/proc/version/recording", "serve.record"),
        ("+serve.speed=2", "serve.speed"),
        ("+train.params.network.rnn.name=lstm", "train.params.network.rnn"),
    ],
)
def test_bad_serving_input_is_refused_before_start_naming_the_key(compose_cfg, override, key):
    cfg = compose_cfg("task=Cartpole", "gmi.per_gpu=3", "gmi.mode=serve", override)
    with pytest.raises(ConfigError) as err:
        plan_run(cfg, platform=NO_GPU)
    assert err.value.key == key


def test_a_folder_that_holds_a_recording_is_refused(compose_cfg, tmp_path):
    (tmp_path / "manifest.json").write_text("{}")
    cfg = compose_cfg("task=Cartpole", "gmi.mode=serve", f"serve.record={tmp_path}")
    with pytest.raises(ConfigError, match="already holds a recording") as err:
        plan_run(cfg, platform=NO_GPU)
    assert err.value.key == "serve.record"
