"""Humanoid: model layout, observations and rewards worked out by hand, assets_root, backend
agreement and a short PPO run.

Hand-computed tests build a :class:`PhysicsFrame` (float64 numbers -> float32 JAX) and call the
task's pure functions; expected values are float64 arithmetic written out from the formulas.
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
from isaacgymenvs_gmi.tasks.base import ASSETS_DIR, ModelInfo
from isaacgymenvs_gmi.tasks.humanoid import Humanoid
from isaacgymenvs_gmi.tasks.locomotion import LocomotionCarry
from tests.env_fixtures import rollout
from tests.helpers import f32

DT = 0.0166  # sim.dt
DEG = math.pi / 180.0
SQ3 = math.sqrt(3.0)
N = 4
# dof order, ranges (deg) and motor gears (= upstream motor efforts)
JOINTS = (
    ("abdomen_z", -45, 45, 67.5),
    ("abdomen_y", -75, 30, 67.5),
    ("abdomen_x", -35, 35, 67.5),
    ("right_hip_x", -45, 15, 45.0),
    ("right_hip_z", -60, 35, 45.0),
    ("right_hip_y", -120, 45, 135.0),
    ("right_knee", -160, 2, 90.0),
    ("right_ankle_y", -50, 50, 22.5),
    ("right_ankle_x", -50, 50, 22.5),
    ("left_hip_x", -45, 15, 45.0),
    ("left_hip_z", -60, 35, 45.0),
    ("left_hip_y", -120, 45, 135.0),
    ("left_knee", -160, 2, 90.0),
    ("left_ankle_y", -50, 50, 22.5),
    ("left_ankle_x", -50, 50, 22.5),
    ("right_shoulder1", -90, 70, 67.5),
    ("right_shoulder2", -90, 70, 67.5),
    ("right_elbow", -90, 50, 45.0),
    ("left_shoulder1", -90, 70, 67.5),
    ("left_shoulder2", -90, 70, 67.5),
    ("left_elbow", -90, 50, 45.0),
)
LOWER = np.array([j[1] for j in JOINTS], np.float64)
UPPER = np.array([j[2] for j in JOINTS], np.float64)
GEAR = np.array([j[3] for j in JOINTS], np.float64)
RATIO = GEAR / 135.0  # motor effort ratio: gear / max gear


@pytest.fixture(scope="module")
def model_and_task(task_cfg):
    cfg = task_cfg("Humanoid")
    model, timing = compile_task_model(Humanoid, cfg)
    return model, Humanoid(cfg["env"], timing.dt, ModelInfo.from_model(model))


@pytest.fixture(scope="module")
def humanoid(model_and_task) -> Humanoid:
    return model_and_task[1]


# --------------------------------------------------------------------------------------------
# model and contract
# --------------------------------------------------------------------------------------------


def test_model_layout(model_and_task):
    m, task = model_and_task
    assert (m.nq, m.nv, m.nu, m.nsensordata) == (28, 27, 21, 12)
    assert m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j) for j in range(1, 22)]
    assert names == [j[0] for j in JOINTS]
    np.testing.assert_allclose(m.jnt_range[1:], np.stack([LOWER, UPPER], 1) * DEG, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(task.effort), GEAR)  # powerScale 1
    np.testing.assert_allclose(np.asarray(task.initial_dof_pos), 0.0)  # 0 is inside every range
    assert 30.0 < m.body_subtreemass[1] < 60.0  # a ~40 kg person
    torso = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, "torso")
    np.testing.assert_allclose(m.body_pos[torso], [0.0, 0.0, 1.34])
    # only feet and shins meet the floor, nothing meets the body
    touching = {
        mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_BODY, m.geom_bodyid[g])
        for g in range(m.ngeom)
        if m.geom_bodyid[g] and m.geom_conaffinity[g]
    }
    assert touching == {f"{s}_{p}" for s in ("right", "left") for p in ("foot", "shin")}
    assert not m.geom_contype[m.geom_bodyid > 0].any()
    assert list(task.info.sensors) == [
        f"{f}_foot_{k}" for f in ("right", "left") for k in ("force", "torque")
    ]


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_contract_random_steps(shared_env, restart_env, step_env, backend):
    env = shared_env("Humanoid", backend)
    obs = restart_env(env)  # sizes, spaces, buffers: tests/sim/test_sim_contract.py
    assert torch.isfinite(obs).all()
    rng = np.random.default_rng(3)
    for _ in range(5):
        actions = rng.uniform(-1.0, 1.0, (N, 21)).astype(np.float32)
        o, rew, reset, _ = step_env(env, actions)
        assert o["obs"].shape == (N, 108) and rew.shape == (N,) and reset.shape == (N,)
        assert torch.isfinite(o["obs"]).all() and torch.isfinite(rew).all()
        np.testing.assert_allclose(o["obs"][:, 87:108].numpy(), actions)  # no reset this early
        # applied torques: action * gear * contactForceScale
        np.testing.assert_allclose(o["obs"][:, 54:75].numpy(), actions * GEAR * 0.01, rtol=1e-6)
    assert np.abs(o["obs"][:, 75:87].numpy()).max() > 0.0  # the foot sensors read loads


def test_first_observation_of_an_episode(shared_env, restart_env):
    obs = restart_env(shared_env("Humanoid", "mujoco")).numpy().astype(np.float64)
    np.testing.assert_allclose(obs[:, 0], 1.34, atol=1e-6)
    np.testing.assert_allclose(obs[:, 1:9], 0.0, atol=1e-6)  # at rest, upright, yaw 0
    np.testing.assert_allclose(obs[:, 9], math.atan2(-1.34, 1000.0), atol=1e-6)
    np.testing.assert_allclose(obs[:, 10:12], 1.0, atol=1e-6)  # upright, facing the target
    # no forces, no sensor readings, no actions before the first step
    np.testing.assert_array_equal(obs[:, 54:108], 0.0)
    assert np.abs(obs[:, 33:54]).max() <= 0.1 * 0.1 + 1e-6  # U(-0.1, 0.1) * dofVelocityScale


# --------------------------------------------------------------------------------------------
# observations by hand
# --------------------------------------------------------------------------------------------

A = -math.pi / 3  # yaw -60 deg: cos A = 0.5, sin A = -sqrt(3)/2
POS = (10.0, -2.0, 1.2)
QUAT = (math.cos(A / 2), 0.0, 0.0, math.sin(A / 2))
LIN_VEL = (1.0, 2.0, 0.5)  # world frame
ANG_VEL = (0.4, -0.8, 1.2)  # body frame (MuJoCo's free joint)
# abdomen z, y, x | right hip x, z, y, knee, ankle y, x | left leg | right arm | left arm
DOF_DEG = (9, -22.5, 35) + (-15, -60, 45, 2, 0, -25) + (3, -12.5, -37.5, -79, 50, 10)
DOF_DEG += (-10, 70, -20) + (-50, 0, -90)
DOF_VEL = np.linspace(-2.0, 2.0, 21)
SENSORS = np.arange(12, dtype=np.float64) * 10.0 - 55.0  # -55, -45, ..., 55
ACTIONS = np.linspace(-1.0, 1.0, 21)


def _frame(pos=POS, quat=QUAT) -> PhysicsFrame:
    qpos = [[*pos, *quat, *(d * DEG for d in DOF_DEG)]]
    qvel = [[*LIN_VEL, *ANG_VEL, *DOF_VEL]]
    return PhysicsFrame(f32(qpos), f32(qvel), f32([SENSORS]))


def test_observation_every_slot(humanoid):
    d_prev = math.hypot(1000.0 - 9.0, 2.0)  # the torso was 1 m further back last step
    carry = LocomotionCarry(f32([-d_prev / DT]), f32([0.0]))
    obs, new_carry = humanoid.observe(_frame(), f32([ACTIONS]), carry)
    assert obs.shape == (1, 108) and obs.dtype == jnp.float32
    o = np.asarray(obs[0], np.float64)
    assert o[0] == pytest.approx(1.2, abs=1e-6)
    # world velocity (1, 2, 0.5) rotated by +60 deg about z: (0.5 - sqrt3, sqrt3/2 + 1, 0.5)
    np.testing.assert_allclose(o[1:4], [0.5 - SQ3, SQ3 / 2 + 1.0, 0.5], atol=1e-6)
    np.testing.assert_allclose(o[4:7], [0.1, -0.2, 0.3], atol=1e-7)  # * angularVelocityScale
    assert o[7] == pytest.approx(-math.pi / 3, abs=1e-5)  # yaw wrapped into (-pi, pi]
    assert o[8] == pytest.approx(0.0, abs=1e-6)  # roll
    # angle to target: atan2(0 - 1.2, 1000 - 10) - yaw (5 pi / 3 before wrapping), wrapped
    assert o[9] == pytest.approx(math.atan2(-1.2, 990.0) + math.pi / 3, abs=1e-5)
    assert o[10] == pytest.approx(1.0, abs=1e-6)  # up projection under a pure yaw
    # heading: (cos A, sin A, 0) . (990, 2, 0) / |(990, 2)|
    heading = (0.5 * 990.0 - SQ3 / 2 * 2.0) / math.sqrt(990.0**2 + 4.0)
    assert o[11] == pytest.approx(heading, abs=1e-6)
    scaled = (2.0 * np.array(DOF_DEG) - UPPER - LOWER) / (UPPER - LOWER)
    np.testing.assert_allclose(o[12:33], scaled, atol=2e-6)
    # e.g. abdomen_z 9 / 45; abdomen_y midway; abdomen_x at its upper limit; right hip x midway,
    # hip z at its lower limit; the knee at +2 deg, its upper limit; left knee -79 deg midway
    np.testing.assert_allclose(o[[12, 13, 14, 15, 16, 18, 24]], [0.2, 0, 1, 0, -1, 1, 0], atol=2e-6)
    np.testing.assert_allclose(o[33:54], DOF_VEL * 0.1, atol=1e-6)  # * dofVelocityScale
    # dof forces: action * gear * powerScale (1) * contactForceScale (0.01); e.g. the right
    # knee (slot 6): action -0.4 * 90 * 0.01 = -0.36
    np.testing.assert_allclose(o[54:75], ACTIONS * GEAR * 0.01, atol=1e-6)
    assert o[54 + 6] == pytest.approx(-0.36, abs=1e-6)
    np.testing.assert_allclose(o[75:87], SENSORS * 0.01, atol=1e-6)  # -0.55, -0.45, ...
    np.testing.assert_allclose(o[87:108], ACTIONS, atol=1e-7)
    d = math.hypot(990.0, 2.0)
    np.testing.assert_allclose(np.asarray(new_carry.potentials), [-d / DT], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new_carry.prev_potentials), [-d_prev / DT], rtol=1e-6)


def test_angles_of_a_torso_rolled_past_pi(humanoid):
    r = 200.0 * DEG  # roll 200 deg about x: reads as -160 deg
    quat = (math.cos(r / 2), math.sin(r / 2), 0.0, 0.0)
    obs, _ = humanoid.observe(_frame(quat=quat), f32([ACTIONS]), humanoid.initial_carry(1))
    o = np.asarray(obs[0], np.float64)
    assert o[8] == pytest.approx(-160.0 * DEG, abs=1e-5)
    assert o[7] == pytest.approx(0.0, abs=1e-5)
    assert o[9] == pytest.approx(math.atan2(-1.2, 990.0), abs=1e-5)
    assert o[10] == pytest.approx(math.cos(r), abs=1e-6)  # up projection = cos 200 deg < 0
    assert o[11] == pytest.approx(990.0 / math.sqrt(990.0**2 + 4.0), abs=1e-6)


# --------------------------------------------------------------------------------------------
# reward and termination by hand
# --------------------------------------------------------------------------------------------


def _obs(height=1.2, up=1.0, heading=1.0, dof_pos=(), dof_vel=()) -> np.ndarray:
    obs = np.zeros((1, 108))
    obs[0, 0], obs[0, 10], obs[0, 11] = height, up, heading
    obs[0, 12 : 12 + len(dof_pos)] = dof_pos
    obs[0, 33 : 33 + len(dof_vel)] = dof_vel
    return obs


def _reward(humanoid, obs, actions, progress=0.0):
    carry = LocomotionCarry(f32([progress]), f32([0.0]))
    reward, done = humanoid.reward_and_termination(f32(obs), f32(actions), carry)
    return float(reward[0]), bool(done[0])


def test_reward_every_term_by_hand(humanoid):
    # slots: 0 abdomen_z (gear 67.5), 5 right_hip_y (135), 6 right_knee (90), 7 right_ankle_y
    # (22.5); ratios 0.5, 1, 2/3, 1/6
    dof_pos = np.zeros(21)
    dof_pos[[0, 5, 6, 7]] = [0.99, -1.0, 0.98, 0.97]
    dof_vel = np.zeros(21)
    dof_vel[[0, 5, 6, 7]] = [0.5, -0.2, 1.5, -3.0]
    actions = np.zeros((1, 21))
    actions[0, [0, 5, 6, 7, 20]] = [1.0, 0.5, -0.4, 0.2, -1.0]
    obs = _obs(up=0.95, heading=0.6, dof_pos=dof_pos, dof_vel=dof_vel)
    reward, done = _reward(humanoid, obs, actions, progress=0.75)
    # actions cost: 0.01 * (1 + 0.25 + 0.16 + 0.04 + 1) = 0.01 * 2.45
    # electricity: 0.05 * (|1 * 0.5| 0.5 + |0.5 * -0.2| 1 + |-0.4 * 1.5| 2/3 + |0.2 * -3| 1/6)
    #            = 0.05 * (0.25 + 0.1 + 0.4 + 0.1) = 0.05 * 0.85
    # at limit (|p| > 0.98): 0.25 * ((0.99 - 0.98) / 0.02 * 0.5 + (1 - 0.98) / 0.02 * 1)
    #            = 0.25 * (0.25 + 1); 0.98 itself and 0.97 cost nothing
    # heading 0.5 * 0.6 / 0.8 = 0.375; up bonus 0.1 (0.95 > 0.93); alive 2
    expected = 0.75 + 2.0 + 0.1 + 0.375 - 0.01 * 2.45 - 0.05 * 0.85 - 0.25 * 1.25
    assert expected == pytest.approx(2.8455)
    assert reward == pytest.approx(expected, abs=1e-5)
    assert not done


def test_joints_at_limit_cost_by_hand(humanoid):
    """The at-limit cost, alone: (|p| - 0.98) / 0.02 * jointsAtLimitCost * effort ratio."""
    for slot, p in [(0, 0.99), (5, -0.995), (7, 1.0), (15, -0.981), (3, 0.98), (17, -0.5)]:
        dof_pos = np.zeros(21)
        dof_pos[slot] = p
        reward, _ = _reward(humanoid, _obs(dof_pos=dof_pos), np.zeros((1, 21)))
        cost = max(abs(p) - 0.98, 0.0) / 0.02 * 0.25 * RATIO[slot]
        assert reward == pytest.approx(2.0 + 0.1 + 0.5 - cost, abs=2e-6), (slot, p)
    # e.g. slot 7 (ankle, gear 22.5) at its limit: 1 * 0.25 / 6 = 0.041667
    assert 1.0 * 0.25 * RATIO[7] == pytest.approx(0.0416667, abs=1e-7)


@pytest.mark.parametrize(
    "up, heading, up_term, heading_term",
    [
        (0.94, 0.9, 0.1, 0.5),  # both above their thresholds
        (0.93, 0.9, 0.0, 0.5),  # no up bonus at 0.93 itself (strict >)
        (0.94, 0.8, 0.1, 0.5),  # 0.5 * 0.8 / 0.8: continuous at 0.8
        (-0.5, -0.4, 0.0, -0.25),  # upside down, facing away: 0.5 * -0.4 / 0.8
    ],
)
def test_up_and_heading_branches(humanoid, up, heading, up_term, heading_term):
    reward, done = _reward(humanoid, _obs(up=up, heading=heading), np.zeros((1, 21)))
    assert reward == pytest.approx(2.0 + up_term + heading_term, abs=1e-6)
    assert not done


@pytest.mark.parametrize("height, fallen", [(0.79, True), (0.81, False), (0.0, True)])
def test_death_below_termination_height(humanoid, height, fallen):
    reward, done = _reward(humanoid, _obs(height=height), np.ones((1, 21)), progress=5.0)
    assert done is fallen
    # standing: 5 progress + 2 alive + 0.1 up + 0.5 heading - 0.01 * 21 (sum a^2, dofs still)
    assert reward == pytest.approx(-1.0 if fallen else 7.6 - 0.21, abs=1e-5)


def test_progress_from_observe_to_reward(humanoid):
    d_prev, d = math.hypot(991.0, 2.0), math.hypot(990.0, 2.0)
    carry = LocomotionCarry(f32([-d_prev / DT]), f32([0.0]))
    actions = f32([np.zeros(21)])
    obs, carry = humanoid.observe(_frame(), actions, carry)
    reward, _ = humanoid.reward_and_termination(obs, actions, carry)
    o = np.asarray(obs[0], np.float64)
    at_limit = np.clip(np.abs(o[12:33]) - 0.98, 0.0, None) / 0.02 * RATIO
    expected = (d_prev - d) / DT + 2.0 + 0.1 + 0.5 * o[11] / 0.8 - 0.25 * at_limit.sum()
    # potentials are ~6e4 in float32 (ulp 4e-3): their difference is good to ~1e-2
    assert float(reward[0]) == pytest.approx(expected, abs=2e-2)


def test_reset_sampling(humanoid):
    qpos, qvel = (np.asarray(x) for x in humanoid.sample_reset(jax.random.PRNGKey(3), 64))
    np.testing.assert_allclose(qpos[:, :7], np.tile([0, 0, 1.34, 1, 0, 0, 0], (64, 1)), atol=1e-7)
    np.testing.assert_array_equal(qvel[:, :6], 0.0)
    assert np.all(np.abs(qpos[:, 7:]) <= 0.2 + 1e-6)
    assert np.all(qpos[:, 7:] >= LOWER * DEG - 1e-6) and np.all(qpos[:, 7:] <= UPPER * DEG + 1e-6)
    assert qpos[:, 7 + 6].max() <= 2 * DEG + 1e-6  # the knee stops at +2 deg
    assert np.all(np.abs(qvel[:, 6:]) <= 0.1) and qpos[:, 7:].std(axis=0).min() > 0.01
    carry = humanoid.initial_carry(2)
    np.testing.assert_allclose(np.asarray(carry.potentials), -1000.0 / DT, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# assets_root
# --------------------------------------------------------------------------------------------

# IsaacGymEnvs' asset lists its motors in another order than its dofs
UPSTREAM_MOTOR_ORDER = [1, 0, 2, 3, 4, 5, 6, 8, 7, 9, 10, 11, 12, 14, 13, 15, 16, 17, 18, 19, 20]


def _root_with(tmp_path, edit) -> str:
    (tmp_path / "mjcf").mkdir(exist_ok=True)
    text = edit((ASSETS_DIR / "humanoid.xml").read_text())
    (tmp_path / "mjcf" / "nv_humanoid.xml").write_text(text)
    return str(tmp_path)


def _upstream_like(text: str) -> str:
    """Bigger head, an undefined material, extra sensors, motors in upstream's order."""
    motors = [line for line in text.splitlines(keepends=True) if "<motor joint=" in line]
    assert len(motors) == 21
    text = text.replace("".join(motors), "".join(motors[i] for i in UPSTREAM_MOTOR_ORDER))
    head = 'name="head" type="sphere" pos="0 0 0.19" size="0.09"'
    assert head in text
    text = text.replace(head, head.replace("0.09", "0.1") + ' material="self"')
    sensors = '<sensor><jointpos joint="right_knee"/><framepos objtype="body" objname="torso"/>'
    return text.replace("</actuator>", "</actuator>\n  " + sensors + "</sensor>")


def test_assets_root_file_with_upstream_quirks(task_cfg, tmp_path):
    root = _root_with(tmp_path, _upstream_like)
    cfg = task_cfg("Humanoid")
    assert cfg["env"]["asset"]["assetFileName"] == "mjcf/nv_humanoid.xml"
    model, _ = compile_task_model(Humanoid, cfg, assets_root=root)
    head = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, "head")
    assert model.geom_size[head, 0] == pytest.approx(0.1)  # not the bundled 0.09
    assert model.nsensordata == 12 and model.nu == 21  # only the foot sensors are left
    task = Humanoid(cfg["env"], DT, ModelInfo.from_model(model))
    # action i still drives dof i with dof i's gear, whatever the motor order
    assert list(model.actuator_gear[:, 0]) == list(GEAR[UPSTREAM_MOTOR_ORDER])
    dof_of_motor = model.actuator_trnid[:, 0] - 1  # joint 0 is the root
    np.testing.assert_array_equal(task.info.actuator_action, dof_of_motor)
    np.testing.assert_allclose(np.asarray(task.effort), GEAR)
    # and it runs
    physics = PhysicsOptions(backend="mujoco", num_threads=1, assets_root=root)
    env = VecTask(cfg, "cpu", "cpu", physics=physics)
    try:
        obs, rew, _, _ = env.step(torch.full((N, 21), 0.5))
        assert torch.isfinite(obs["obs"]).all() and torch.isfinite(rew).all()
    finally:
        env.close()


def test_assets_root_without_feet_is_refused(task_cfg, tmp_path):
    root = _root_with(tmp_path, lambda t: t.replace('name="left_foot"', 'name="left_paw"'))
    with pytest.raises(ValueError, match="assetFileName") as err:
        compile_task_model(Humanoid, task_cfg("Humanoid"), assets_root=root)
    assert "left_foot" in str(err.value)


# --------------------------------------------------------------------------------------------
# backend agreement
# --------------------------------------------------------------------------------------------

ANGLE_SLOTS = [7, 8, 9]  # yaw, roll, angle to target: compared modulo 2 pi


def _error(a, b):
    err = np.abs(a - b)
    err[..., ANGLE_SLOTS] = np.abs((a - b + math.pi) % (2 * math.pi) - math.pi)[..., ANGLE_SLOTS]
    return err


def test_backends_agree_in_flight_and_landing(shared_env, restart_env, step_env):
    """mujoco (float64) vs mjx (float32) from the same state under the same actions.

    Flight: the seed-0 reset pose lifted to 8 m, random actions for 40 steps, no contact.
    Landing: the reset pose under zero actions for 25 steps (the feet touch down at step 7).
    Measured max |obs difference|: flight 2.3e-5; landing 4.5e-4, in the foot sensors (slots
    75:87, impact forces of ~200 N scaled by 0.01; other slots 4e-5). Tolerances 1e-4 and 2e-3.
    Both need a converged contact solver: with 4 Newton iterations instead of 8 the backends part
    by ~1 at touchdown. Longer contact-rich windows are not compared: a humanoid falling over is
    chaotic and small float32 differences grow.
    """
    c, x = shared_env("Humanoid", "mujoco"), shared_env("Humanoid", "mjx")
    restart_env(c)
    qpos, qvel = c.backend.physics_state()
    qpos = qpos.astype(np.float32).astype(np.float64)
    qpos[:, 2] = 8.0
    flight = (qpos, np.zeros_like(qvel))
    actions = np.random.default_rng(1).normal(0.0, 0.5, (40, N, 21)).astype(np.float32)
    obs_c = rollout(c, actions, flight)[0]
    obs_x = rollout(x, actions, flight)[0]
    assert obs_c[-1, :, 0].min() > 4.0 and np.abs(obs_c[:, :, 75:87]).max() > 0.0
    err = _error(obs_c, obs_x)
    assert err.max() < 1e-4, f"flight: max obs error {err.max():.2e}"

    zeros = np.zeros((25, N, 21), np.float32)
    obs_c = rollout(c, zeros)[0]
    obs_x = rollout(x, zeros)[0]
    assert np.abs(obs_c[-1, :, 75:87]).max() > 1.0  # the feet carry the body's weight
    err = _error(obs_c, obs_x)
    assert err.max() < 2e-3, f"landing: max obs error {err.max():.2e}"


# --------------------------------------------------------------------------------------------
# PPO
# --------------------------------------------------------------------------------------------


def test_ppo_learns_to_stay_up(compose_cfg, tmp_path):
    """Upstream HumanoidPPO, scaled down: 128 envs x 32 steps x 20 epochs (81,920 frames),
    minibatch 2048, seed 42, mujoco backend. Measured 122-186 s wall but 58 s of CPU time on the
    2-core machine while other jobs kept it at load ~8: roughly 40 s alone. Random policies fall
    within ~30 steps and staying up pays 2 per step: the mean episode reward went 32.6 -> 71.0
    (first five epochs 36.1 on average, last five 71.5)."""
    cfg = compose_cfg(
        "task=Humanoid",
        "num_envs=128",
        "train.params.config.minibatch_size=2048",
        "max_iterations=20",
        "seed=42",
        f"train_dir={tmp_path}",
    )
    result = run(cfg, plan_run(cfg))
    rewards = [r for _, _, r in result.history]
    assert len(rewards) == 20 and all(math.isfinite(r) for r in rewards)
    early, late = sum(rewards[:5]) / 5, sum(rewards[-5:]) / 5
    assert late > early + 20, f"reward did not rise: {rewards}"
