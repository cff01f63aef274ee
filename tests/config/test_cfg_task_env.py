"""The task settings the runtime reads, typed once: envs, timing, clips, asset; refusals name
the key, and nothing has a silent default where upstream's files always give a value."""

from __future__ import annotations

import math

import pytest

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.task_env import TaskEnvSettings


def _task(**env) -> dict:
    return {"name": "Ant", "sim": {"dt": 0.0166, "substeps": 2}, "env": {"numEnvs": 64, **env}}


def test_the_settings_read_as_the_file_gives_them():
    s = TaskEnvSettings.from_task_config(
        _task(
            numEnvs="128",
            controlFrequencyInv=3,
            clipObservations=5.0,
            clipActions=1,
            asset={"assetFileName": "mjcf/nv_ant.xml"},
        )
    )
    assert s.num_envs == 128  # a digit string is a count
    assert (s.timing.dt, s.timing.substeps, s.timing.control_freq_inv) == (0.0166, 2, 3)
    assert s.timing.nstep == 6 and s.timing.timestep == pytest.approx(0.0083)
    assert (s.clip_obs, s.clip_actions, s.clip_actions_given) == (5.0, 1.0, True)
    assert s.asset_file == "mjcf/nv_ant.xml"


def test_upstreams_defaults_where_a_file_sets_none():
    s = TaskEnvSettings.from_task_config(_task())
    assert s.clip_obs == math.inf and s.clip_actions == math.inf and not s.clip_actions_given
    assert s.timing.substeps == 2 and s.timing.control_freq_inv == 1 and s.asset_file is None


@pytest.mark.parametrize(
    ("task", "key"),
    [
        ({"name": "Ant", "sim": {}, "env": {"numEnvs": 4}}, "task.sim.dt"),
        (_task(numEnvs=0), "task.env.numEnvs"),
        (_task(numEnvs=2.5), "task.env.numEnvs"),
        ({**_task(), "sim": {"dt": -0.01}}, "task.sim.dt"),
        ({**_task(), "sim": {"dt": 0.01, "substeps": 1.5}}, "task.sim.substeps"),
        (_task(controlFrequencyInv=0), "task.env.controlFrequencyInv"),
        (_task(episodeLength="long"), "task.env.episodeLength"),
        (_task(clipObservations="abc"), "task.env.clipObservations"),
        (_task(clipActions=0), "task.env.clipActions"),
    ],
)
def test_a_bad_value_is_refused_naming_its_key(task, key):
    with pytest.raises(ConfigError) as err:
        TaskEnvSettings.from_task_config(task)
    assert err.value.key == key


def test_the_plan_has_one_env_count_the_tasks_own(compose_cfg):
    from isaacgymenvs_gmi.launch import plan_run

    cfg = compose_cfg("task=Cartpole", "num_envs=32", "train.params.config.minibatch_size=512")
    plan = plan_run(cfg, platform=(False, ("cpu",), False))
    assert plan.num_envs == plan.task_env.num_envs == plan.task_config["env"]["numEnvs"] == 32
    assert plan.task_env.timing.dt == plan.task_config["sim"]["dt"]
    with pytest.raises(AttributeError):
        plan.num_envs = 16  # derived from the task's settings, not a second copy
