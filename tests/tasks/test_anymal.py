"""Anymal: contract, rules worked out by hand, terminations, backend agreement, URDF assets, PPO.

Hand-computed tests build a :class:`PhysicsFrame` (numpy -> float32 JAX), call the task's pure
JAX functions and compare with float64 arithmetic written out from the formulas.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.launch import plan_run, run
from isaacgymenvs_gmi.sim.model import compile_task_model
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask
from isaacgymenvs_gmi.tasks import PhysicsFrame
from isaacgymenvs_gmi.tasks.anymal import DOF_NAMES, Anymal, AnymalCarry
from isaacgymenvs_gmi.tasks.base import ModelInfo, TaskConfigError
from tests.env_fixtures import rollout
from tests.helpers import f32

# defaultJointAngles in dof order LF, LH, RF, RH x HAA, HFE, KFE
DEFAULT = np.array([0.03, 0.4, -0.8, 0.03, -0.4, 0.8, -0.03, 0.4, -0.8, -0.03, -0.4, 0.8])
DT = 0.02  # sim.dt * controlFrequencyInv
N = 4


@pytest.fixture(scope="module")
def anymal(task_cfg) -> Anymal:
    cfg = task_cfg("Anymal")
    model, timing = compile_task_model(Anymal, cfg)
    return Anymal(cfg["env"], timing.dt, ModelInfo.from_model(model))


def _carry(commands, torque_sq=None, contact=None) -> AnymalCarry:
    n = len(commands)
    torque_sq = np.zeros(n) if torque_sq is None else torque_sq
    contact = np.zeros(n, bool) if contact is None else contact
    return AnymalCarry(f32(commands), f32(torque_sq), jnp.asarray(contact))


# --------------------------------------------------------------------------------------------
# Contract and model
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_contract(shared_env, restart_env, step_env, backend):
    env = shared_env("Anymal", backend)
    obs = restart_env(env)
    assert torch.isfinite(obs).all()  # sizes, spaces, buffers: tests/sim/test_sim_contract.py
    actions = np.random.default_rng(0).uniform(-1, 1, (10, N, 12))
    for a in actions:
        o, rew, reset, extras = step_env(env, a)
        assert o["obs"].shape == (N, 48) and torch.isfinite(o["obs"]).all()
        assert rew.shape == (N,) and torch.isfinite(rew).all() and (rew >= 0).all()
        assert reset.shape == (N,) and extras["time_outs"].shape == (N,)


def test_model_layout(anymal, task_cfg):
    cfg = anymal.env_cfg
    model, timing = compile_task_model(Anymal, task_cfg("Anymal"))
    assert model.opt.timestep == pytest.approx(0.01) and timing.nstep == 2
    assert model.opt.impratio == 10.0 and model.opt.integrator == mujoco.mjtIntegrator.mjINT_EULER
    names = [model.joint(j).name for j in range(model.njnt)]
    assert names == ["root", *DOF_NAMES]
    assert (model.nq, model.nv, model.nu) == (19, 18, 12)
    assert [model.joint(model.actuator_trnid[k, 0]).name for k in range(12)] == list(DOF_NAMES)
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], 85.0)  # stiffness
    np.testing.assert_allclose(model.actuator_biasprm[:, 1:3], [[-85.0, -2.0]] * 12)  # damping
    np.testing.assert_allclose(model.actuator_forcerange, [[-80.0, 80.0]] * 12)
    np.testing.assert_allclose(model.jnt_range[[1, 4]], [[-0.72, 0.49]] * 2)  # LF, LH HAA
    np.testing.assert_allclose(model.jnt_range[[7, 10]], [[-0.49, 0.72]] * 2)  # RF, RH HAA
    assert model.body_mass.sum() == pytest.approx(52.1, abs=0.1)
    sensors = [model.sensor(i).name for i in range(model.nsensor)]
    assert sensors == ["base_touch0"] + [f"{leg}_THIGH_touch0" for leg in ("LF", "LH", "RF", "RH")]
    assert anymal.max_episode_length == 2500  # 50 s / 0.02 s
    np.testing.assert_allclose(anymal.action_scale(), 0.5)
    np.testing.assert_allclose(anymal.action_offset(), DEFAULT)
    short = Anymal({**cfg, "learn": {**cfg["learn"], "episodeLength_s": 1}}, 0.01, anymal.info)
    assert short.max_episode_length == 100 and short.rew_torque == pytest.approx(-2.5e-7)


def test_check_config_names_the_key(anymal):
    angles = {k: v for k, v in anymal.env_cfg["defaultJointAngles"].items() if k != "RH_KFE"}
    with pytest.raises(TaskConfigError, match="RH_KFE") as err:
        Anymal.check_config({**anymal.env_cfg, "defaultJointAngles": angles})
    assert err.value.key == "defaultJointAngles"
    ranges = {**anymal.env_cfg["randomCommandVelocityRanges"], "yaw": [1.0, -1.0]}
    with pytest.raises(TaskConfigError) as err:
        Anymal.check_config({**anymal.env_cfg, "randomCommandVelocityRanges": ranges})
    assert err.value.key == "randomCommandVelocityRanges.yaw"
    with pytest.raises(TaskConfigError, match="float"):
        Anymal.check_config({**anymal.env_cfg, "urdfAsset": {"fixBaseLink": True}})
    Anymal.check_config(anymal.env_cfg)


# --------------------------------------------------------------------------------------------
# Observations, torques, contacts and rewards by hand
# --------------------------------------------------------------------------------------------

C15, S15 = math.cos(math.pi / 12), math.sin(math.pi / 12)  # half of a 30 deg roll
QUATS = [(math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5)), (C15, S15, 0.0, 0.0)]  # yaw 90, roll 30
LIN_VEL = [(1.0, 2.0, 0.5), (0.0, 1.0, 0.0)]  # world frame
ANG_VEL = [(0.1, -0.2, 0.4), (-1.0, 0.0, 2.0)]  # base frame (MuJoCo's free joint)
DOF_OFFSET = np.array([np.linspace(-0.3, 0.25, 12), np.linspace(0.2, -0.35, 12)])
DOF_VEL = np.array([np.arange(12) - 6.0, -8.0 * np.arange(12)])
ACTIONS = np.array([np.linspace(-1.0, 1.0, 12), np.full(12, 0.5)])
COMMANDS = [(1.5, -0.5, 0.8), (-2.0, 1.0, -1.0)]


def _frame(sensordata=None) -> PhysicsFrame:
    qpos = [[0.0, 0.0, 0.55, *QUATS[i], *(DEFAULT + DOF_OFFSET[i])] for i in range(2)]
    qvel = [[*LIN_VEL[i], *ANG_VEL[i], *DOF_VEL[i]] for i in range(2)]
    sensordata = np.zeros((2, 5)) if sensordata is None else sensordata
    return PhysicsFrame(f32(qpos), f32(qvel), f32(sensordata))


def test_observation_layout_by_hand(anymal):
    obs, carry = anymal.observe(_frame(), f32(ACTIONS), _carry(COMMANDS))
    assert obs.shape == (2, 48) and obs.dtype == jnp.float32
    c30, s30 = math.cos(math.pi / 6), 0.5
    expected = np.zeros((2, 48))
    # base-frame linear velocity * 2: yawed by 90 deg, world (1, 2, 0.5) is (2, -1, 0.5) in the
    # base; rolled by 30 deg, world (0, 1, 0) is (0, cos 30, -sin 30)
    expected[0, 0:3] = np.array([2.0, -1.0, 0.5]) * 2.0
    expected[1, 0:3] = np.array([0.0, c30, -s30]) * 2.0
    expected[:, 3:6] = np.array(ANG_VEL) * 0.25
    # upstream's projected gravity: (0, 0, -1) rotated by q (roll 30: (0, sin 30, -cos 30))
    expected[0, 6:9] = [0.0, 0.0, -1.0]
    expected[1, 6:9] = [0.0, s30, -c30]
    expected[:, 9:12] = np.array(COMMANDS) * [2.0, 2.0, 0.25]
    expected[:, 12:24] = DOF_OFFSET * 1.0  # (dof pos - default) * dofPositionScale
    expected[:, 24:36] = DOF_VEL * 0.05
    expected[:, 36:48] = ACTIONS
    np.testing.assert_allclose(np.asarray(obs), expected, rtol=0, atol=2e-6)
    np.testing.assert_array_equal(np.asarray(carry.commands), np.float32(COMMANDS))


def test_torque_penalty_input_by_hand(anymal):
    _, carry = anymal.observe(_frame(), f32(ACTIONS), _carry(COMMANDS))
    # PD drive: 85 (0.5 a + default - q) - 2 qdot = 85 (0.5 a - offset) - 2 qdot, clipped +-80
    torque = 85.0 * (0.5 * ACTIONS - DOF_OFFSET) - 2.0 * DOF_VEL
    assert torque[1, 0] == pytest.approx(85 * (0.25 - 0.2) - 0.0)  # 4.25 N m
    assert torque[0, 0] == pytest.approx(85 * (-0.5 + 0.3) + 12.0)  # -5.0 N m
    assert torque[1, 11] == pytest.approx(85 * (0.25 + 0.35) + 176.0)  # 227 N m: saturates
    clipped = np.clip(torque, -80.0, 80.0)
    np.testing.assert_allclose(np.asarray(carry.torque_sq), (clipped**2).sum(1), rtol=1e-5)


@pytest.mark.parametrize(
    "touch, contact",
    [
        ((0.0, 0.0, 0.0, 0.0, 0.0), False),
        ((1.5, 0.0, 0.0, 0.0, 0.0), True),  # base
        ((1.0, 1.0, 1.0, 1.0, 1.0), False),  # exactly 1 N is allowed (strict >)
        ((0.0, 0.0, 0.0, 1.01, 0.0), True),  # RF knee
        ((0.9, 0.9, 0.9, 0.9, 0.9), False),  # forces are not pooled across bodies
    ],
)
def test_contact_from_touch_sensors(anymal, touch, contact):
    sensordata = np.array([touch, np.zeros(5)])
    _, carry = anymal.observe(_frame(sensordata), f32(ACTIONS), _carry(COMMANDS))
    assert carry.contact.tolist() == [contact, False]
    _, done = anymal.reward_and_termination(jnp.zeros((2, 48)), f32(ACTIONS), carry)
    assert done.tolist() == [contact, False]


def test_reward_by_hand(anymal):
    # obs slots the reward reads: v_xy * 2 in 0:2, yaw rate * 0.25 in 5
    obs = np.zeros((4, 48))
    obs[0, 0:2], obs[0, 5] = np.array([1.0, -0.5]) * 2, 0.5 * 0.25  # tracks its command exactly
    obs[1, 0:2], obs[1, 5] = np.array([0.5, 0.0]) * 2, 0.0  # errors 0.25 and 0.25
    obs[2] = obs[1]
    obs[3, 0:2], obs[3, 5] = np.array([1.0, -0.5]) * 2, 0.5 * 0.25
    commands = [(1.0, -0.5, 0.5), (1.0, 0.0, 0.5), (1.0, 0.0, 0.5), (1.0, -0.5, 0.5)]
    torque_sq = [0.0, 1000.0, 1e5, 0.0]
    contact = [False, False, False, True]
    reward, done = anymal.reward_and_termination(
        f32(obs), jnp.zeros((4, 12)), _carry(commands, torque_sq, contact)
    )
    lin, ang, tor = 1.0 * DT, 0.5 * DT, -0.000025 * DT  # scales times dt
    expected = [
        lin + ang,  # = 0.03, the most a step can earn
        math.exp(-0.25 / 0.25) * lin + math.exp(-0.25 / 0.25) * ang + 1000.0 * tor,
        0.0,  # the torque penalty (-0.05) outweighs tracking: clipped at zero
        lin + ang,  # a contact ends the episode without a penalty (as upstream)
    ]
    assert expected[1] == pytest.approx(0.0110363823 - 0.0005)
    np.testing.assert_allclose(np.asarray(reward), expected, rtol=1e-5, atol=1e-9)
    assert done.tolist() == [False, False, False, True]


def test_reset_sampling(anymal):
    qpos, qvel = anymal.sample_reset(jax.random.key(3), 4096)
    q, v = np.asarray(qpos, np.float64), np.asarray(qvel, np.float64)
    np.testing.assert_allclose(q[:, :7], [[0, 0, 0.62, 1, 0, 0, 0]] * 4096, atol=1e-7)
    assert np.all(v[:, :6] == 0.0)
    ratio = q[:, 7:] / DEFAULT  # dof = default * U(0.5, 1.5)
    assert ratio.min() >= 0.5 - 1e-6 and ratio.max() <= 1.5 + 1e-6
    assert abs(ratio.mean() - 1.0) < 0.01
    assert np.abs(v[:, 6:]).max() <= 0.1 and abs(v[:, 6:].mean()) < 0.002
    frame = PhysicsFrame(qpos, qvel, jnp.zeros((4096, 5)))
    carry = anymal.reset_carry(anymal.initial_carry(4096), frame, jax.random.PRNGKey(5))
    cmd = np.asarray(carry.commands, np.float64)
    low, high = np.array([-2.0, -1.0, -1.0]), np.array([2.0, 1.0, 1.0])
    assert (cmd >= low).all() and (cmd <= high).all()
    # uniform over the ranges: mean 0, variance (high - low)^2 / 12, uncorrelated components
    np.testing.assert_allclose(cmd.mean(0), 0.0, atol=0.05)
    np.testing.assert_allclose(cmd.var(0), (high - low) ** 2 / 12, rtol=0.08)
    assert np.abs(np.corrcoef(np.c_[cmd, v[:, 6]].T) - np.eye(4)).max() < 0.06
    again = anymal.reset_carry(anymal.initial_carry(4096), frame, jax.random.PRNGKey(5))
    np.testing.assert_array_equal(np.asarray(again.commands), cmd.astype(np.float32))
    other = anymal.reset_carry(anymal.initial_carry(4096), frame, jax.random.PRNGKey(6))
    assert not np.allclose(np.asarray(other.commands), cmd)  # another key, other commands
    obs, _ = anymal.observe(frame, jnp.zeros((4096, 12)), carry)
    np.testing.assert_allclose(np.asarray(obs[:, 9:12]), cmd * [2.0, 2.0, 0.25], rtol=1e-6)


# --------------------------------------------------------------------------------------------
# Terminations and timeouts in the simulator
# --------------------------------------------------------------------------------------------


def _pose(base_z, quat, dof) -> tuple[np.ndarray, np.ndarray]:
    qpos = np.tile([0.0, 0.0, base_z, *quat, *dof], (N, 1))
    return qpos, np.zeros((N, 18))


# thighs vertical, shanks folded up level with the knees: the knee capsules reach 5 mm into the
# floor when the base is at 0.33 m (0.33 - 0.285 - 0.05), the base box stays 0.24 m above it
KNEELING = [0.0, 0.0, -math.pi / 2, 0.0, 0.0, math.pi / 2] * 2
UPSIDE_DOWN = (0.0, 1.0, 0.0, 0.0)  # 180 deg about x: the base box's top 1 cm into the floor


@pytest.mark.parametrize(
    "pose, terminated",
    [((0.33, (1, 0, 0, 0), KNEELING), True), ((0.08, UPSIDE_DOWN, DEFAULT), True)],
    ids=["knees", "base"],
)
def test_contacts_end_episodes(shared_env, restart_env, step_env, pose, terminated):
    env = shared_env("Anymal", "mujoco")
    restart_env(env)
    env.backend.set_physics_state(*_pose(*pose))
    _, _, reset, extras = step_env(env, np.zeros((N, 12)))
    assert reset.bool().tolist() == [terminated] * N
    assert not extras["time_outs"].any()


def test_landing_on_its_feet_is_no_contact(shared_env, restart_env, step_env):
    env = shared_env("Anymal", "mujoco")
    restart_env(env)
    for _ in range(50):  # drops from 0.62 m onto its feet and stands for a second
        _, _, reset, _ = step_env(env, np.zeros((N, 12)))
        assert not reset.any()
    assert (env.backend.physics_state()[0][:, 2] > 0.45).all()


def test_timeout_from_episode_length_s(task_cfg, step_env):
    cfg = task_cfg("Anymal")
    cfg["env"]["learn"]["episodeLength_s"] = 0.12  # length 6 (0.02 s steps): 5-step episodes
    env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(backend="mujoco", num_threads=1))
    try:
        for step in range(1, 6):
            _, _, reset, extras = step_env(env, np.zeros((N, 12)))
            assert reset.bool().tolist() == [step == 5] * N
            assert extras["time_outs"].tolist() == [step == 5] * N
    finally:
        env.close()


def test_every_episode_keeps_the_commands_its_first_observation_shows(task_cfg, step_env):
    """Resets hand finished envs a new episode's task carry (the mujoco backend swaps it in on
    the host): the commands in the observations stay those of the episode's first observation,
    and change from one episode to the next."""
    cfg = task_cfg("Anymal")
    cfg["env"]["learn"]["episodeLength_s"] = 0.12  # length 6 (0.02 s steps): 5-step episodes
    env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(backend="mujoco", num_threads=1))
    try:
        shown = env.obs_buf[:, 9:12].numpy().copy()  # (N, 3) scaled commands of each episode
        episodes = [shown.copy()]
        rng = np.random.default_rng(0)
        for step in range(1, 16):
            obs, _, reset, _ = step_env(env, rng.normal(0.0, 0.5, (N, 12)))
            commands = obs["obs"][:, 9:12].numpy()
            done = reset.bool().numpy()
            assert done.tolist() == [step % 5 == 0] * N
            # a finished env returns its new episode's first observation
            np.testing.assert_array_equal(commands[~done], shown[~done])
            if done.any():
                shown = commands.copy()
                episodes.append(shown)
    finally:
        env.close()
    assert len(episodes) == 4
    for before, after in zip(episodes, episodes[1:], strict=False):
        assert (np.abs(before - after).max(axis=1) > 1e-3).all()


# --------------------------------------------------------------------------------------------
# MuJoCo (C, float64) vs MJX (float32)
# --------------------------------------------------------------------------------------------


def _agreement(shared_env, restart, step, actions, state=None) -> float:
    c, x = shared_env("Anymal", "mujoco"), shared_env("Anymal", "mjx")
    if state is not None:
        restart(c)
        state = tuple(s.astype(np.float32).astype(np.float64) for s in state(c))
    obs_c = rollout(c, actions, state)[0]
    obs_x = rollout(x, actions, state)[0]
    return float(np.abs(obs_c - obs_x).max())


def test_backends_agree_in_flight(shared_env, restart_env, step_env):
    """Reset pose lifted to 3 m, random actions: legs swing, no contact for 30 steps.
    Measured max |obs difference| 1.7e-5; tolerance 1e-4."""

    def lifted(env):
        qpos, qvel = env.backend.physics_state()
        qpos[:, 2] = 3.0
        return qpos, np.zeros_like(qvel)

    actions = np.random.default_rng(1).uniform(-1, 1, (30, N, 12))
    assert _agreement(shared_env, restart_env, step_env, actions, lifted) < 1e-4


def test_backends_agree_landing_and_standing(shared_env, restart_env, step_env):
    """Seed-0 reset states, zero actions: drops 7 cm onto its feet, sags and stands (60 steps).
    Measured max |obs difference| 2.6e-5; tolerance 1e-4. Under random actions, feet that
    push and slide make the two diverge chaotically after ~30 steps (as Ant's contacts do)."""
    actions = np.zeros((60, N, 12))
    assert _agreement(shared_env, restart_env, step_env, actions) < 1e-4


# --------------------------------------------------------------------------------------------
# IsaacGymEnvs assets: the ANYmal URDF through assets_root
# --------------------------------------------------------------------------------------------


def _inertial(mass, z=0.0) -> str:
    return (
        f'<inertial><origin xyz="0 0 {z}"/><mass value="{mass}"/><inertia ixx="0.01" ixy="0" '
        'ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
    )


def _collision(shape: str, z=0.0) -> str:
    return f'<collision><origin xyz="0 0 {z}"/><geometry>{shape}</geometry></collision>'


def _joint(name, kind, parent, child, xyz, axis="1 0 0", limit=(-9.42, 9.42)) -> str:
    lim = f'<limit effort="80" lower="{limit[0]}" upper="{limit[1]}" velocity="20"/>'
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{lim if kind == "revolute" else ""}</joint>'
    )


def _anymal_urdf(legs=("LF", "RF", "LH", "RH")) -> str:
    """A small ANYmal-like URDF, legs in the upstream file's order (LF, RF, LH, RH); each thigh's
    collision box sits on a fixed child link, as in ANYmal C; no floor."""
    base_box, base_can = '<box size="1 0.3 0.18"/>', '<cylinder radius="0.07" length="0.12"/>'
    thigh, foot = '<box size="0.07 0.06 0.3"/>', '<sphere radius="0.03"/>'
    y = "0 1 0"  # HFE and KFE axis (HAA: x)
    parts = ['<link name="base">', _inertial(26.0), _collision(base_box)]
    parts += [_collision(base_can, 0.15), "</link>"]
    for leg in legs:
        sx, sy = (1 if leg[1] == "F" else -1), (1 if leg[0] == "L" else -1)
        parts += [
            f'<link name="{leg}_HIP">{_inertial(2.8)}</link>',
            f'<link name="{leg}_THIGH">{_inertial(1.0, -0.15)}</link>',
            f'<link name="{leg}_thigh_fixed">{_inertial(2.0, -0.2)}',
            f"{_collision(thigh, -0.15)}</link>",
            f'<link name="{leg}_SHANK">{_inertial(0.6, -0.1)}{_collision(foot, -0.32)}</link>',
            _joint(f"{leg}_HAA", "revolute", "base", f"{leg}_HIP", f"{0.3 * sx} {0.1 * sy} 0"),
            _joint(
                f"{leg}_HFE", "revolute", f"{leg}_HIP", f"{leg}_THIGH", f"0.06 {0.08 * sy} 0", y
            ),
            _joint(f"{leg}_thigh", "fixed", f"{leg}_THIGH", f"{leg}_thigh_fixed", "0 0 0"),
            _joint(f"{leg}_KFE", "revolute", f"{leg}_THIGH", f"{leg}_SHANK", "0 0.1 -0.285", y),
        ]
    return '<robot name="anymal">' + "".join(parts) + "</robot>"


def _urdf_root(tmp_path, text: str):
    folder = tmp_path / "urdf" / "anymal_c" / "urdf"
    folder.mkdir(parents=True)
    (folder / "anymal.urdf").write_text(text)
    return str(tmp_path)


def test_urdf_from_assets_root(task_cfg, tmp_path):
    root = _urdf_root(tmp_path, _anymal_urdf())
    cfg = task_cfg("Anymal")
    model, _ = compile_task_model(Anymal, cfg, assets_root=root)
    # legs re-ordered into Isaac Gym's dof order, a free base added, fixed links fused
    assert [model.joint(j).name for j in range(model.njnt)] == ["root", *DOF_NAMES]
    assert model.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    bodies = [model.body(b).name for b in range(model.nbody)]
    assert bodies[:5] == ["world", "base", "LF_HIP", "LF_THIGH", "LF_SHANK"] and len(bodies) == 14
    assert model.nu == 12 and np.allclose(model.actuator_gainprm[:, 0], 85.0)
    # a floor was added; cylinders became capsules; robot geoms touch the floor only
    floor = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_PLANE]
    assert len(floor) == 1 and model.geom_bodyid[floor[0]] == 0
    assert mujoco.mjtGeom.mjGEOM_CYLINDER not in model.geom_type
    robot = model.geom_bodyid > 0
    assert (model.geom_contype[robot] == 0).all() and (model.geom_conaffinity[robot] == 1).all()
    # touch sites on the base (box, capsule) and on each thigh, whose box came from a fused link
    sensors = {model.sensor(i).name: model.site_bodyid[model.sensor_objid[i]] for i in range(6)}
    assert model.nsensor == 6 and sensors["base_touch1"] == bodies.index("base")
    assert sensors["RH_THIGH_touch0"] == bodies.index("RH_THIGH")


def test_urdf_actions_follow_isaac_gym_dof_order(task_cfg, tmp_path):
    """Action i drives dof i (LF, LH, RF, RH), though the file lists the legs LF, RF, LH, RH."""
    cfg = task_cfg("Anymal")
    physics = PhysicsOptions(num_threads=1, assets_root=_urdf_root(tmp_path, _anymal_urdf()))
    env = VecTask(cfg, "cpu", "cpu", physics=physics)
    try:
        qpos, qvel = env.backend.physics_state()
        qpos[:, 2], qpos[:, 7:] = 3.0, DEFAULT  # in the air, every drive at its target
        driven = []
        for first in range(0, 12, N):
            env.backend.set_physics_state(qpos, np.zeros_like(qvel))
            actions = torch.zeros(N, 12)
            actions[torch.arange(N), first + torch.arange(N)] = 1.0
            obs, _, _, _ = env.step(actions)
            driven += obs["obs"][:, 24:36].abs().argmax(dim=1).tolist()
        assert driven == list(range(12))
    finally:
        env.close()


def test_urdf_without_anymal_joints_is_refused(task_cfg, tmp_path):
    root = _urdf_root(tmp_path, _anymal_urdf().replace('"RH_KFE"', '"RH_knee"'))
    with pytest.raises(ValueError, match=r"expected the joints .*found .*RH_knee"):
        compile_task_model(Anymal, task_cfg("Anymal"), assets_root=root)
    root = _urdf_root(tmp_path / "b", _anymal_urdf().replace('"base"', '"trunk"'))
    with pytest.raises(ValueError, match="body named 'base'"):
        compile_task_model(Anymal, task_cfg("Anymal"), assets_root=root)


# --------------------------------------------------------------------------------------------
# PPO
# --------------------------------------------------------------------------------------------


def test_ppo_learns_to_stay_up(compose_cfg, tmp_path):
    """AnymalPPO with 256 envs, minibatch 3072 (2 per mini-epoch), seed 0, 8 epochs: 256 x 24 x 8
    = 49,152 env steps. Random actions topple the robot within ~40 steps: the first epochs'
    mean episode reward is 0.024 and 0.087 (at most 0.03 per step); epochs 7 and 8 reach 0.24
    and 0.17 as episodes last longer. Measured 81-106 s wall on a 2-core CPU running other jobs
    (load average ~9, so about a quarter of the CPU); not measured alone (~30 s expected)."""
    cfg = compose_cfg(
        "task=Anymal",
        "num_envs=256",
        "train.params.config.minibatch_size=3072",
        "max_iterations=8",
        "seed=0",
        f"train_dir={tmp_path}",
    )
    result = run(cfg, plan_run(cfg))
    rewards = [r for _, _, r in result.history]
    assert len(rewards) == 8 and all(math.isfinite(r) for r in rewards)
    assert result.frames == 256 * 24 * 8
    early, late = np.mean(rewards[:2]), np.mean(rewards[-2:])
    assert late > 2.0 * early + 0.03, f"reward did not rise: {rewards}"
