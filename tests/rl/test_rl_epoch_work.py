"""What an epoch did besides its losses: steps a real gradient scaler skipped are counted from the
optimizer's own step count, and the epoch's seconds are split into stages that add up."""

from __future__ import annotations

import time

import pytest
import torch

from isaacgymenvs_gmi.rl.epoch_work import STAGES, EpochMeter, optimizer_steps


def test_steps_the_gradient_scaler_skips_are_counted():
    layer = torch.nn.Linear(3, 1)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-3)
    try:
        scaler = torch.amp.GradScaler("cpu", init_scale=2.0**4)
    except (RuntimeError, TypeError):
        pytest.skip("this torch has no gradient scaler for the CPU")
    meter = EpochMeter()
    assert optimizer_steps(optimizer) == 0
    meter.start(optimizer_steps(optimizer), 0.0, 0.0)
    for step in range(5):
        optimizer.zero_grad()
        loss = layer(torch.ones(2, 3)).sum() * (float("inf") if step in (1, 3) else 1.0)
        scaler.scale(loss).backward()
        meter.updates += 1
        scaler.step(optimizer)  # skipped when the gradients hold an inf
        scaler.update()
    work = meter.finish(optimizer_steps(optimizer), 0.0, 0.0, 0.0, 0.0, 0.0)
    assert (work.updates, work.skipped) == (5, 2)
    assert optimizer_steps(optimizer) == 3 and meter.skipped_total == 2


def test_the_stages_add_up_to_the_epochs_wall_time():
    meter = EpochMeter()
    meter.start(0, handoff_s=1.0, collective_s=2.0)
    meter.add("inference", 0.01)
    time.sleep(0.2)  # the epoch took at least this long
    # rl-games timed 0.02 s of env steps (0.005 of them hand-offs) and a 0.02 s update, of
    # which 0.004 s waited in collectives; 0.001 s more waited after it
    work = meter.finish(
        0, 1.005, 2.005, step_time=0.02, update_time=0.02, collective_in_update_s=2.004
    )
    assert list(work.stages) == list(STAGES)
    assert work.stages["env_step"] == pytest.approx(0.015)
    assert work.stages["update"] == pytest.approx(0.016)
    assert work.stages["collectives"] == pytest.approx(0.005)
    assert sum(work.stages.values()) >= 0.2 and work.stages["other"] > 0.1
