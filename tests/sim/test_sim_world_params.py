"""Domain randomisation of the physics (IsaacGymEnvs' ``sim_params`` and ``actor_params``): the
settings at the edge, draws against their configured distribution, schedule and buckets, the
rhythm of redraws, the mapping onto MuJoCo fields, and worlds that really differ in the physics
on both backends."""

from __future__ import annotations

import copy

import mujoco
import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.randomization import PropertySpec, RandomizationSettings
from isaacgymenvs_gmi.sim.model import compile_task_model
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask
from isaacgymenvs_gmi.sim.world_params import (
    WorldParams,
    WorldUpdate,
    actor_bodies,
    dampratio_to_restitution,
    draw,
    restitution_to_dampratio,
)
from isaacgymenvs_gmi.tasks import get_task_class
from tests.env_fixtures import load_task_cfg

PREFIX = "task.task.randomization_params"


def _settings(params: dict) -> RandomizationSettings:
    return RandomizationSettings.from_task_config(
        {"task": {"randomize": True, "randomization_params": params}}
    )


def _spec(**node) -> PropertySpec:
    node.setdefault("operation", "scaling")
    return PropertySpec.from_node(node, prefix="x")


def _model(task: str) -> mujoco.MjModel:
    return compile_task_model(get_task_class(task), load_task_cfg(task))[0]


# --- settings at the edge -------------------------------------------------------------------
def test_shadow_hand_openai_schema_is_read_and_what_has_no_counterpart_is_named(compose_cfg):
    from omegaconf import OmegaConf

    cfg = compose_cfg("task=ShadowHand", "task.task.randomize=True")
    settings = RandomizationSettings.from_task_config(OmegaConf.to_container(cfg.task))
    assert settings.frequency == 720 and settings.physics
    assert settings.gravity == PropertySpec("gaussian", "additive", (0.0, 0.4))
    keys = {(p.actor, p.group, p.attribute) for p in settings.actor_properties}
    assert ("hand", "dof_properties", "stiffness") in keys
    assert ("object", "rigid_shape_properties", "friction") in keys
    friction = next(p for p in settings.actor_properties if p.attribute == "friction")
    assert friction.spec.num_buckets == 250
    assert settings.not_applied == ("actor_params.hand.color", "actor_params.object.scale")
    line = settings.describe()
    assert "sim_params.gravity" in line and "hand.rigid_body_properties.mass" in line
    assert "not applied: actor_params.hand.color, actor_params.object.scale" in line


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"sim_params": {"gravity": {"range": [0, 1], "distribution": "poisson"}}}, "distribution"),
        ({"sim_params": {"wind": {"range": [0, 1]}}}, "sim_params.wind"),
        ({"actor_params": {"ant": {"joint_properties": {}}}}, "joint_properties"),
        ({"actor_params": {"ant": {"dof_properties": {"gain": {"range": [0, 1]}}}}}, "gain"),
        (
            {
                "actor_params": {
                    "ant": {
                        "dof_properties": {
                            "damping": {"range": [0, 2], "distribution": "loguniform"}
                        }
                    }
                }
            },  # fmt: skip
            "range",
        ),
        (
            {
                "actor_params": {
                    "ant": {
                        "rigid_body_properties": {"mass": {"range": [1, 2], "setup_only": "yes"}}
                    }
                }
            },  # fmt: skip
            "setup_only",
        ),
        (
            {
                "actor_params": {
                    "ant": {
                        "rigid_shape_properties": {"friction": {"range": [1, 2], "num_buckets": -1}}
                    }
                }
            },  # fmt: skip
            "num_buckets",
        ),
    ],
)
def test_bad_physics_settings_are_refused_naming_the_key(params, key):
    with pytest.raises(ConfigError, match=rf"^{PREFIX}\.[\w.]*{key}="):
        _settings(params)


def test_an_actor_the_task_does_not_have_is_refused_naming_the_actors():
    settings = _settings(
        {"actor_params": {"robot": {"dof_properties": {"damping": {"range": [0.5, 1.5]}}}}}
    )
    with pytest.raises(ConfigError, match=r"actor_params\.robot=.*'ant'"):
        WorldParams(settings, _model("Ant"), get_task_class("Ant").actors, 2, seed=0)


def test_actors_are_upstreams_names_or_by_default_the_bodies_on_the_world():
    model = _model("ShadowHand")
    hand = actor_bodies(get_task_class("ShadowHand").actors, model)["hand"]
    assert model.body("robot0:ffdistal").id in hand and model.body("object").id not in hand
    default = actor_bodies(None, model)
    assert sorted(default) == ["object", "robot0:hand mount"]
    assert np.array_equal(default["robot0:hand mount"], hand)


def test_tendons_belong_to_the_actor_whose_joints_they_span():
    model = _model("ShadowHand")
    spec = {"range": [2.0, 2.0], "distribution": "uniform", "operation": "scaling"}
    for actor, expected in (("hand", model.ntendon), ("object", 0)):
        settings = _settings({"actor_params": {actor: {"tendon_properties": {"damping": spec}}}})
        params = WorldParams(settings, model, get_task_class("ShadowHand").actors, 1, 0)
        assert [t.index.size for t in params.targets] == [expected]


def test_physics_randomisation_is_off_by_default():
    env = VecTask(load_task_cfg("Ant"), "cpu", "cpu", physics=PhysicsOptions(num_threads=1))
    assert env.world_params is None
    env.close()


# --- draws ----------------------------------------------------------------------------------
N = 200_000  # means within ~4 standard errors below


def test_draws_follow_the_configured_distribution():
    rng = np.random.default_rng(0)
    g = draw(_spec(range=[1.0, 0.2], distribution="gaussian"), rng, N, step=0)
    assert abs(g.mean() - 1.0) < 4 * 0.2 / N**0.5 and abs(g.std() - 0.2) < 0.002
    u = draw(_spec(range=[0.7, 1.3], distribution="uniform"), rng, N, step=0)
    assert u.min() >= 0.7 and u.max() <= 1.3 and abs(u.mean() - 1.0) < 0.002
    lu = draw(_spec(range=[0.3, 3.0], distribution="loguniform"), rng, N, step=0)
    logs = np.log(lu)
    assert lu.min() >= 0.3 and lu.max() <= 3.0
    assert abs(logs.mean() - np.log(0.3 * 3.0) / 2) < 0.01  # uniform in log space
    assert abs(np.median(lu) - 0.9**0.5) < 0.01


def test_schedules_move_draws_towards_no_change():
    rng = np.random.default_rng(1)
    linear = dict(range=[0.5, 1.5], distribution="uniform", schedule="linear", schedule_steps=100)
    half = draw(_spec(**linear), rng, N, step=50)  # scaling: the ends move halfway to 1
    assert half.min() >= 0.75 and half.max() <= 1.25 and half.min() < 0.76
    assert np.all(draw(_spec(**linear), rng, 10, step=0) == 1.0)
    additive = {**linear, "operation": "additive", "range": [0.0, 1.0]}
    assert draw(_spec(**additive), rng, N, step=25).max() <= 0.25
    constant = dict(range=[0.0, 1.0], distribution="gaussian", schedule="constant",
                    schedule_steps=10, operation="additive")  # fmt: skip
    assert np.all(draw(_spec(**constant), rng, 100, step=9) == 0.0)
    assert draw(_spec(**constant), rng, N, step=10).std() > 0.99
    log = dict(range=[0.5, 2.0], distribution="loguniform", schedule="linear", schedule_steps=4)
    quarter = draw(_spec(**log), rng, N, step=1)  # ends at 0.875 and 1.25
    assert quarter.min() >= 0.875 and quarter.max() <= 1.25


def test_buckets_snap_draws_to_upstreams_levels():
    rng = np.random.default_rng(2)
    spec = _spec(range=[0.7, 1.3], distribution="uniform", num_buckets=250)
    out = draw(spec, rng, N, step=0)
    levels = 0.7 + 0.6 * np.arange(250) / 250
    assert np.unique(out).size == 250
    assert np.allclose(np.unique(out), levels)


# --- rhythm and field mapping ---------------------------------------------------------------
ANT_DOFS = {
    "frequency": 5,
    "sim_params": {"gravity": {"range": [0, 1.0], "distribution": "gaussian"}},
    "actor_params": {
        "ant": {
            "rigid_body_properties": {
                "mass": {
                    "range": [0.5, 1.5],
                    "distribution": "uniform",
                    "operation": "scaling",
                    "setup_only": True,
                }  # fmt: skip
            },
            "dof_properties": {
                "damping": {
                    "range": [0.5, 2.0],
                    "distribution": "loguniform",
                    "operation": "scaling",
                }  # fmt: skip
            },
        }
    },
}


def test_worlds_are_redrawn_when_their_episode_ends_after_frequency_steps():
    model = _model("Ant")
    params = WorldParams(_settings(ANT_DOFS), model, get_task_class("Ant").actors, 4, seed=0)
    first = params.first()
    damping, mass = first.fields["dof_damping"].copy(), first.fields["body_mass"].copy()
    assert len({tuple(row) for row in damping}) == 4  # every world its own draw
    ended = np.array([True, False, True, False])
    gravity_steps = []
    for step in range(1, 5):  # fewer than `frequency` env steps: no world is redrawn
        update = params.after_step(step * 2, lambda: ended)  # 2 physics steps per env step
        assert update is None or update.rows.size == 0
        if update is not None and update.gravity is not None:
            gravity_steps.append(step * 2)
    update = params.after_step(10, lambda: ended)  # 5 env steps
    assert list(update.rows) == [0, 2]
    assert not np.allclose(update.fields["dof_damping"], damping[[0, 2]])
    assert np.array_equal(update.fields["body_mass"], mass[[0, 2]])  # setup_only: kept
    assert np.array_equal(params.tables["dof_damping"][[1, 3]], damping[[1, 3]])
    assert update.gravity is None  # 4 physics steps since the last gravity draw
    update = params.after_step(12, lambda: ended)  # counters restarted: only gravity
    assert update.rows.size == 0 and update.gravity is not None
    assert gravity_steps == [6]  # every `frequency` physics steps


def test_mass_moves_inertia_with_it_and_stiffness_moves_a_position_actuators_gain():
    model = _model("ShadowHand")
    settings = _settings({
        "actor_params": {"hand": {
            "rigid_body_properties": {"mass": {"range": [2.0, 2.0], "distribution": "uniform",
                                               "operation": "scaling"}},
            "dof_properties": {"stiffness": {"range": [3.0, 3.0], "distribution": "uniform",
                                             "operation": "scaling"}},
        }}
    })  # fmt: skip
    tables = WorldParams(settings, model, get_task_class("ShadowHand").actors, 2, 0).first().fields
    hand = model.body_mass > 0
    hand[model.body("object").id] = False
    assert np.allclose(tables["body_mass"][:, hand], 2 * model.body_mass[hand])
    assert np.allclose(tables["body_inertia"][:, hand], 2 * model.body_inertia[hand])
    obj = model.body("object").id
    assert np.allclose(tables["body_mass"][:, obj], model.body_mass[obj])  # another actor
    driven = model.actuator_trntype == mujoco.mjtTrn.mjTRN_JOINT
    assert driven.sum() > 10
    assert np.allclose(
        tables["actuator_gainprm"][:, driven, 0], 3 * model.actuator_gainprm[driven, 0]
    )
    assert np.allclose(
        tables["actuator_biasprm"][:, driven, 1], -tables["actuator_gainprm"][:, driven, 0]
    )


def test_restitution_maps_to_the_contact_damping_ratio_that_rebounds_with_it():
    e = np.array([0.0, 0.1, 0.5, 0.9])
    ratio = restitution_to_dampratio(e)
    assert ratio[0] == 1.0 and np.all(np.diff(ratio) < 0)
    assert np.allclose(dampratio_to_restitution(ratio), e, atol=1e-6)
    assert dampratio_to_restitution(np.array([1.0]))[0] == 0.0  # MuJoCo's default: no bounce


# --- the physics ----------------------------------------------------------------------------
def _env(task: str, backend: str, params: dict | None, num_envs: int = 2) -> VecTask:
    cfg = copy.deepcopy(load_task_cfg(task))
    cfg["env"]["numEnvs"] = num_envs
    if params is not None:
        cfg["task"] = {"randomize": True, "randomization_params": params}
    return VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(backend=backend, num_threads=1))


def _from_world_0(env: VecTask, lift: float = 0.0) -> np.ndarray:
    """Every world in world 0's state, ``lift`` higher and at rest; returns that qpos (N, nq)."""
    qpos = np.repeat(np.array(env.backend.physics_state()[0])[:1], env.num_envs, 0)
    qpos[:, 2] += lift
    env.backend.set_physics_state(
        qpos, np.zeros((env.num_envs, env.backend.physics_state()[1].shape[1]))
    )
    return qpos


def _run(env: VecTask, steps: int, action: float) -> np.ndarray:
    """``steps`` env steps with the same ``action`` in every world; (N, nq) final qpos."""
    for _ in range(steps):
        env.step(torch.full((env.num_envs, env.num_actions), action))
    return np.array(env.backend.physics_state()[0])


MASSES = {
    "actor_params": {
        "ant": {
            "rigid_body_properties": {
                "mass": {"range": [0.3, 3.0], "distribution": "loguniform", "operation": "scaling"}
            }
        }
    }
}
NO_GRAVITY = {"gravity": {"range": [0.0, 0.0], "distribution": "uniform", "operation": "scaling"}}


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_worlds_differ_in_the_physics_as_drawn(backend):
    """Drawn masses: worlds from one state under the same actions diverge (identical worlds
    agree). Drawn gravity (scaled by 0): a torso lifted clear of the floor stays up (it falls
    3.4 cm in 5 steps of 1/60 s under the model's own)."""
    for params in (None, {**MASSES, "sim_params": NO_GRAVITY}):
        env = _env("Ant", backend, params)
        start = _from_world_0(env, lift=0.5)
        fall = _run(env, 5, 0.0)[:, 2] - start[:, 2]
        _from_world_0(env)
        apart = np.abs(np.diff(_run(env, 10, 0.5), axis=0)).max()
        env.close()
        if params is None:
            assert fall.max() < -0.02 and apart < 1e-5
        else:
            masses = env.world_params.tables["body_mass"]
            assert not np.allclose(masses[0], masses[1])
            assert np.abs(fall).max() < 1e-3 and apart > 1e-2


def test_an_update_reaches_only_its_worlds_in_the_c_engine():
    env = _env("Ant", "mujoco", MASSES, num_envs=3)
    worlds = env.backend.worlds
    assert len({id(m) for m in worlds._models}) == 3  # a model per world
    mass = np.array(worlds._models[1].body_mass)
    new = env.world_params.tables["body_mass"][[2]] * 2
    env.backend.apply_world(WorldUpdate(np.array([2]), {"body_mass": new}))
    assert np.allclose(worlds._models[2].body_mass, new[0])
    assert np.array_equal(worlds._models[1].body_mass, mass)
    env.close()
