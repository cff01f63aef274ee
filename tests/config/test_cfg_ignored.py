"""Isaac-Gym-only settings are listed, and reported once per process."""

from __future__ import annotations

import logging

import pytest

from isaacgymenvs_gmi.config import ignored, ignored_physx_keys, report_ignored_keys
from isaacgymenvs_gmi.launch import plan_run

NO_GPU = (False, ("cpu",), False)  # (cuda available, JAX platforms, warp installed)

TOP_LEVEL = [
    "physics_engine",
    "pipeline",
    "graphics_device_id",
    "num_threads",
    "solver_type",
    "num_subscenes",
]


def test_ant(compose_cfg):
    keys = ignored_physx_keys(compose_cfg("task=Ant"))
    assert keys[: len(TOP_LEVEL)] == TOP_LEVEL
    for key in (
        "task.physics_engine",
        "task.sim.physx",
        "task.sim.use_gpu_pipeline",
        "task.env.envSpacing",
        "task.env.enableCameraSensors",
        "task.env.enableDebugVis",
        "task.env.plane.staticFriction",
        "task.env.plane.dynamicFriction",
        "task.env.plane.restitution",
    ):
        assert key in keys
    # physx is one entry, not one per setting
    assert not [k for k in keys if k.startswith("task.sim.physx.")]
    # randomisation is off in Ant.yaml
    assert "task.task.randomize" not in keys
    assert "task.task.randomization_params" not in keys
    # settings the MuJoCo tasks do read are never listed
    for kept in ("task.sim.dt", "task.sim.substeps", "task.sim.gravity", "task.env.numEnvs"):
        assert kept not in keys
    assert len(keys) == len(set(keys))


def test_cartpole(compose_cfg):
    keys = ignored_physx_keys(compose_cfg("task=Cartpole"))
    assert "task.env.asset.assetRoot" in keys
    assert "task.env.enableDebugVis" not in keys
    assert not [k for k in keys if k.startswith("task.env.plane")]


def test_randomize_is_not_listed_as_ignored(compose_cfg):
    """Domain randomisation has a report of its own (what is applied and what is not)."""
    keys = ignored_physx_keys(compose_cfg("task=Ant", "task.task.randomize=True"))
    assert not [k for k in keys if "randomiz" in k]


def test_plain_mapping():
    cfg = {
        "pipeline": "gpu",
        "task": {"sim": {"physx": {"num_threads": 4}, "dt": 0.01}, "task": {"randomize": True}},
    }
    assert ignored_physx_keys(cfg) == ["pipeline", "task.sim.physx"]
    assert ignored_physx_keys({}) == []


@pytest.fixture
def fresh_report(monkeypatch):
    monkeypatch.setattr(ignored, "_reported", False)


def test_report_logs_one_line_once(compose_cfg, caplog, fresh_report):
    cfg = compose_cfg("task=Ant")
    log = logging.getLogger("test.ignored")
    with caplog.at_level(logging.INFO, logger="test.ignored"):
        first = report_ignored_keys(cfg, log)
        second = report_ignored_keys(cfg, log)
    assert first == ignored_physx_keys(cfg)
    assert second == []
    records = [r for r in caplog.records if r.name == "test.ignored"]
    assert len(records) == 1
    message = records[0].getMessage()
    assert "\n" not in message
    assert "task.sim.physx" in message and "num_subscenes" in message


def test_keys_neither_the_task_nor_rl_games_reads_are_named_in_the_same_line(
    compose_cfg, caplog, fresh_report
):
    """Found when the run is planned: the task records what it reads as it is built, and
    rl-games' own source spells every key it can read."""
    cfg = compose_cfg(
        "task=Cartpole", "+task.env.numActions=abc", "+train.params.config.learning_rat=3"
    )
    plan = plan_run(cfg, NO_GPU)
    assert plan.unread_keys == ("task.env.numActions", "train.params.config.learning_rat")
    log = logging.getLogger("test.ignored")
    with caplog.at_level(logging.INFO, logger="test.ignored"):
        report_ignored_keys(cfg, log, plan.unread_keys)
    (message,) = [r.getMessage() for r in caplog.records if r.name == "test.ignored"]
    assert message.startswith("Isaac Gym settings not used by the MuJoCo backends")
    assert message.endswith(
        "; read by neither the task nor rl-games: task.env.numActions, "
        "train.params.config.learning_rat"
    )


@pytest.mark.parametrize("task", ["Ant", "Humanoid", "FrankaCabinet", "ShadowHand"])
def test_what_the_bundled_configs_carry_unread_is_what_upstream_has_and_we_do_not_use(
    compose_cfg, task
):
    unread = plan_run(compose_cfg(f"task={task}"), NO_GPU).unread_keys
    assert not [k for k in unread if k.startswith("train.")], unread  # rl-games reads them all
    expected = {
        "Ant": (),
        "Humanoid": (),
        "FrankaCabinet": ("task.env.numProps", "task.env.aggregateMode"),
        "ShadowHand": ("task.env.forceDecay", "task.env.resetRotationNoise"),
    }[task]
    assert set(expected) <= set(unread), unread
