"""The sync-PPO body's parts: mode registry and dispatch, lockstep exchanges over real GMI
processes, and the epoch telemetry from plain numbers."""

from __future__ import annotations

import io

import pytest
import torch

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.gmi.spawn import spawn_gmis
from isaacgymenvs_gmi.launch import plan_run, run
from isaacgymenvs_gmi.rl.epoch_work import EpochWork
from isaacgymenvs_gmi.runners import MODES, Mode, ModeFacts, ModeTerms, mode_named
from isaacgymenvs_gmi.runners.sync_ppo import run_sync_ppo
from isaacgymenvs_gmi.runners.sync_ppo.telemetry import EpochTelemetry
from tests.gmi.probe_bodies import describe_context, exercise_lockstep

NO_GPU = (False, ("cpu",), False)


def test_every_registered_mode_is_planned_with_its_body(compose_cfg):
    assert mode_named("sync").body is run_sync_ppo
    needs = {"pbt": ("pbt=pbt_default",)}  # a population needs its PBT config
    for mode in MODES:
        cfg = compose_cfg(
            "task=Cartpole", f"gmi.mode={mode}", "gmi.per_gpu=2", *needs.get(mode, ())
        )
        assert plan_run(cfg, platform=NO_GPU).mode == mode


def test_a_mode_without_a_plug_in_is_refused_before_start(compose_cfg, monkeypatch):
    monkeypatch.delitem(MODES, "serve")
    cfg = compose_cfg("task=Cartpole", "gmi.mode=serve", "gmi.per_gpu=2")
    with pytest.raises(ConfigError, match="gmi.mode") as err:
        plan_run(cfg, platform=NO_GPU)
    assert "available in this version: sync, async" in str(err.value)
    assert "serve" not in str(err.value).split("available")[1]


def test_a_registered_mode_is_checked_and_run_without_the_launcher_naming_it(
    compose_cfg, monkeypatch
):
    """A plug-in's check decides what the run survives; its body is what the GMIs run."""
    seen: list[ModeFacts] = []

    def check(facts: ModeFacts) -> ModeTerms:
        seen.append(facts)
        return ModeTerms(expendable=(1,), min_alive=1)

    probe = Mode("serve", "a probe", describe_context, check=check, trains=False)
    monkeypatch.setitem(MODES, "serve", probe)
    cfg = compose_cfg("task=Cartpole", "gmi.mode=serve", "sim_device=cpu")
    plan = plan_run(cfg, platform=NO_GPU)
    assert len(seen) == 1 and seen[0].layout.world_size == 1 and not seen[0].cuda
    assert plan.terms == ModeTerms(expendable=(1,), min_alive=1)
    assert run(cfg, plan)["rank"] == 0  # describe_context ran as the body


def test_run_dispatches_to_the_body_registered_for_the_mode(compose_cfg, monkeypatch):
    monkeypatch.setitem(MODES, "sync", Mode("sync", "probe", describe_context))
    cfg = compose_cfg("task=Cartpole", "sim_device=cpu")
    seen = run(cfg, plan_run(cfg, platform=NO_GPU))
    assert seen["rank"] == 0 and seen["world"] is None


def test_lockstep_averages_gradients_and_merges_episode_meters_across_gmis(compose_cfg):
    plan = plan_run(compose_cfg("task=Cartpole", "gmi.per_gpu=2"), platform=NO_GPU)
    seen = spawn_gmis(plan, exercise_lockstep)
    assert all(v == 1.5 for grad in seen["grads"] for v in grad)  # mean of 1 and 2
    assert seen["kl"] == 1.5 and seen["collectives"] == 1  # the KL rode with the gradients
    assert seen["mini_epoch_kl"] == (1.5 + 15.0) / 2  # each minibatch's own, then their mean
    assert seen["meter"] == (20.0, 3)  # (2 x 10 + 1 x 40) / 3 episodes
    assert seen["strategy"] == "auto"
    assert "Algorithm 1 picks mpr for MPL=[[0, 1]]" in seen["reports"][0]
    assert "gradient reduction for 9 values:" in seen["reports"][1]  # 8 gradients, the KL
    # 8 envs x 4 steps per epoch; GMI 0 took 0.5 s, GMI 1 1.0 s
    assert seen["history"][0]["per_gmi"] == [64.0, 32.0]
    assert seen["line"].startswith("[GMI x2] epoch 3/9 frames 192 | 96 env steps/s")


class RecordingWriter:
    def __init__(self):
        self.scalars: list[tuple[str, float, int]] = []

    def add_scalar(self, tag, value, step):
        self.scalars.append((tag, value, step))


def rows(*rates: float, skipped: int = 0, updates: int = 8) -> torch.Tensor:
    """What GMIs gather each epoch: env steps/s, then their EpochWork vector."""
    return torch.tensor(
        [
            [r, *EpochWork(updates, skipped, {"env_step": 0.5, "update": 0.25}).vector()]
            for r in rates
        ]
    )


def test_telemetry_shows_and_logs_throughput_from_numbers():
    gathered = rows(1000.0, 500.0, 250.0)  # three GMIs' env steps/s
    stream, writer = io.StringIO(), RecordingWriter()
    clock = iter([0.0, 4.0]).__next__  # started at 0 s, epoch 2 ended at 4 s
    telemetry = EpochTelemetry(100, 10, 0, lambda x, what: gathered, stream=stream, clock=clock)
    telemetry.record(epoch=2, max_epochs=5, epoch_seconds=1.0, reward=12.345, writer=writer)
    assert stream.getvalue() == (
        "[GMI x3] epoch 2/5 frames 6,000 | 1,750 env steps/s (1.0k 0.5k 0.2k) | mean reward 12.3"
        " | elapsed 0:04, ETA 0:03\n"  # 3 epochs left at this epoch's 1 s
    )
    assert ("gmi/env_steps_per_s_total", 1750.0, 6000) in writer.scalars
    assert ("gmi/env_steps_per_s_gmi2", 250.0, 6000) in writer.scalars
    assert ("gmi/stage_env_step_s_gmi1", 0.5, 6000) in writer.scalars
    assert ("gmi/skipped_steps", 0, 6000) in writer.scalars
    row = telemetry.history[0]
    assert row["frames"] == 6000 and row["stages"]["update"] == [0.25, 0.25, 0.25]


def test_skipped_steps_and_the_epoch_split_are_shown():
    """Steps the gradient scaler skipped are in the line, named when they are most of them;
    the first epoch, and every tenth, says where the slowest GMI's time went."""
    stream = io.StringIO()
    telemetry = EpochTelemetry(100, 10, 0, lambda x, what: rows(10.0, skipped=3), stream=stream)
    work = EpochWork(8, 3, {"env_step": 0.5})
    telemetry.record(epoch=1, max_epochs=5, epoch_seconds=1.0, reward=None, work=work)
    first, split = stream.getvalue().splitlines()
    assert first.endswith(" | 3 of 8 steps skipped")
    assert split.startswith("epoch 1 split (GMI 0), seconds: env_step 0.500, handoff 0.000")
    telemetry.gather = lambda x, what: rows(10.0, 20.0, skipped=5)
    telemetry.record(epoch=2, max_epochs=5, epoch_seconds=1.0, reward=None, work=work)
    assert (
        stream.getvalue()
        .splitlines()[-1]
        .endswith(
            " | 5 of 8 steps skipped (over half: inf/NaN gradients, the policy barely learns)"
        )
    )


def test_telemetry_of_other_gmis_contributes_but_shows_nothing():
    sent = []

    def gather(x, what):
        sent.append(float(x[0]))
        return torch.stack([x, x])

    stream = io.StringIO()
    telemetry = EpochTelemetry(100, 10, 1, gather, stream=stream)
    telemetry.record(epoch=1, max_epochs=5, epoch_seconds=0.5, reward=None)
    assert sent == [2000.0] and stream.getvalue() == "" and telemetry.history == []
