"""Upstream's randomised ShadowHand (``ShadowHandOpenAI_FF``'s ``randomization_params``, which
our ShadowHand task file carries) trains under two GMIs, each with worlds of their own."""

from __future__ import annotations

import math

import isaacgymenvs_gmi


def test_randomised_shadow_hand_trains_under_two_gmis(tmp_path, caplog):
    cfg = isaacgymenvs_gmi.compose_config(
        "task=ShadowHand",
        "task.task.randomize=True",
        "gmi.per_gpu=2",
        "num_envs=64",
        "train.params.config.minibatch_size=256",
        "max_iterations=3",
        f"train_dir={tmp_path}",
    )
    with caplog.at_level("INFO"):
        result = isaacgymenvs_gmi.run(cfg)
    assert result.frames == 3 * 2 * 64 * 8  # epochs x GMIs x envs x horizon
    assert result.history and all(math.isfinite(r) for _, _, r in result.history)
    line = next(r.message for r in caplog.records if "domain randomisation" in r.message)
    assert "sim_params.gravity" in line and "hand.dof_properties.stiffness" in line
