"""Task rules against numbers worked out by hand.

Every test builds a :class:`PhysicsFrame` (numpy -> float32 JAX) and calls the task's pure JAX
functions directly; the expected values are written out as arithmetic in float64, and compared
with float32 tolerances.
"""

from __future__ import annotations

import math
from pathlib import Path

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest
import yaml

from isaacgymenvs_gmi.sim.model import compile_task_model
from isaacgymenvs_gmi.tasks import Ant, Cartpole, PhysicsFrame, rotations
from isaacgymenvs_gmi.tasks.ant import AntCarry
from isaacgymenvs_gmi.tasks.base import ModelInfo
from tests.helpers import f32

CFG_DIR = Path(__file__).resolve().parents[2] / "cfg" / "task"
DT = 0.0166  # sim.dt of both task configs
DEG = math.pi / 180.0


def _task_cfg(name: str) -> dict:
    cfg = yaml.safe_load((CFG_DIR / f"{name}.yaml").read_text())
    cfg["env"]["numEnvs"] = 2  # replaces the Hydra interpolation
    return cfg


def _frame(qpos, qvel, sensordata) -> PhysicsFrame:
    return PhysicsFrame(f32(qpos), f32(qvel), f32(sensordata))


@pytest.fixture(scope="module")
def cartpole() -> Cartpole:
    cfg = _task_cfg("Cartpole")
    model, timing = compile_task_model(Cartpole, cfg)
    return Cartpole(cfg["env"], timing.dt, ModelInfo.from_model(model))


@pytest.fixture(scope="module")
def ant() -> Ant:
    cfg = _task_cfg("Ant")
    model, timing = compile_task_model(Ant, cfg)
    return Ant(cfg["env"], timing.dt, ModelInfo.from_model(model))


# --------------------------------------------------------------------------------------------
# Cartpole
# --------------------------------------------------------------------------------------------


def test_cartpole_observation_layout(cartpole):
    # qpos = [cart position, pole angle], qvel = [cart velocity, pole angular velocity]
    frame = _frame([[0.5, 0.3], [-1.25, -0.1]], [[-2.0, 1.5], [0.75, 4.0]], np.zeros((2, 0)))
    obs, carry = cartpole.observe(frame, jnp.zeros((2, 1)), ())
    assert obs.shape == (2, 4) and obs.dtype == jnp.float32
    expected = [
        [0.5, -2.0, 0.3, 1.5],  # [cart pos, cart vel, pole angle, pole vel]
        [-1.25, 0.75, -0.1, 4.0],
    ]
    np.testing.assert_allclose(np.asarray(obs), expected, rtol=0, atol=1e-7)
    assert carry == ()


def test_cartpole_reward_by_hand(cartpole):
    obs = f32(
        [
            [0.5, -2.0, 0.3, 1.5],
            [-1.25, 0.75, -0.1, 4.0],
            [0.0, 0.0, 0.0, 0.0],
        ]
    )
    reward, done = cartpole.reward_and_termination(obs, jnp.zeros((3, 1)), ())
    expected = [
        1.0 - 0.3**2 - 0.01 * 2.0 - 0.005 * 1.5,  # = 1 - 0.09 - 0.02 - 0.0075 = 0.8825
        1.0 - 0.1**2 - 0.01 * 0.75 - 0.005 * 4.0,  # = 1 - 0.01 - 0.0075 - 0.02 = 0.9625
        1.0,  # upright and at rest
    ]
    assert expected[0] == pytest.approx(0.8825) and expected[1] == pytest.approx(0.9625)
    np.testing.assert_allclose(np.asarray(reward), expected, rtol=1e-6)
    assert reward.dtype == jnp.float32
    assert not np.asarray(done).any()


@pytest.mark.parametrize(
    "cart_pos, pole_angle, failed",
    [
        (3.01, 0.0, True),  # cart beyond resetDist = 3
        (-3.01, 0.0, True),
        (2.99, 0.0, False),
        (3.0, 0.0, False),  # the limit itself is allowed (strict >)
        (0.0, 1.58, True),  # pole beyond pi/2 = 1.5708
        (0.0, -1.58, True),
        (0.0, 1.56, False),
        (2.5, -1.5, False),
    ],
)
def test_cartpole_termination(cartpole, cart_pos, pole_angle, failed):
    obs = f32([[cart_pos, 0.5, pole_angle, -1.0]])
    reward, done = cartpole.reward_and_termination(obs, jnp.zeros((1, 1)), ())
    assert bool(done[0]) is failed
    if failed:
        assert float(reward[0]) == -2.0
    else:
        # 1 - angle^2 - 0.01 * 0.5 - 0.005 * 1.0
        assert float(reward[0]) == pytest.approx(1.0 - pole_angle**2 - 0.005 - 0.005, rel=1e-6)


def test_cartpole_action_scale_is_max_effort(cartpole):
    np.testing.assert_array_equal(cartpole.action_scale(), [400.0])
    assert cartpole.max_episode_length == 500


def test_episode_length_fixed_for_cartpole_read_for_ant(cartpole, ant):
    cfg = {**cartpole.env_cfg, "episodeLength": 5}
    assert Cartpole(cfg, DT, cartpole.info).max_episode_length == 500  # fixed upstream
    assert ant.max_episode_length == 1000  # Ant.yaml
    assert Ant({**ant.env_cfg, "episodeLength": 5}, DT, ant.info).max_episode_length == 5
    np.testing.assert_array_equal(ant.action_scale(), np.ones(8))  # powerScale 1.0


# --------------------------------------------------------------------------------------------
# Ant
# --------------------------------------------------------------------------------------------

# A torso at (10, -2, 0.5) yawed by A = -60 deg, moving and spinning, with known joints.
A = -math.pi / 3  # yaw angle: cos A = 0.5, sin A = -sqrt(3)/2
SQ3 = math.sqrt(3.0)
POS = (10.0, -2.0, 0.5)
QUAT = (math.cos(A / 2), 0.0, 0.0, math.sin(A / 2))  # = (sqrt(3)/2, 0, 0, -1/2)
LIN_VEL = (1.0, 2.0, 0.5)  # world frame
ANG_VEL = (0.1, -0.2, 0.3)  # body frame (MuJoCo's free joint convention)
# joint order: hip_1, ankle_1, hip_2, ankle_2, hip_3, ankle_3, hip_4, ankle_4
# ranges (deg): hips [-40, 40]; ankles 1 and 4 [30, 100], ankles 2 and 3 [-100, -30]
DOF_DEG = (0.0, 65.0, 39.8, -100.0, 39.2, -30.0, -20.0, 73.75)
DOF_SCALED = (
    0.0,  # 0 / 40
    0.0,  # (2 * 65 - 100 - 30) / 70
    0.995,  # 39.8 / 40           -> above 0.99: at limit
    -1.0,  # (-200 + 130) / 70     -> lower limit: not counted (one-sided test)
    0.98,  # 39.2 / 40            -> below 0.99: not at limit
    1.0,  # (-60 + 130) / 70      -> at limit
    -0.5,  # -20 / 40
    0.25,  # (147.5 - 130) / 70
)
DOF_VEL = (1.0, -2.0, 3.0, -4.0, 5.0, -6.0, 7.0, -8.0)
SENSORS = tuple(float(i) - 12.0 for i in range(24))  # -12 .. 11
ACTIONS = (0.5, -0.5, 1.0, -1.0, 0.25, 0.0, 0.1, -0.2)


def _ant_frame(pos=POS, quat=QUAT) -> PhysicsFrame:
    qpos = [*pos, *quat, *(d * DEG for d in DOF_DEG)]
    qvel = [*LIN_VEL, *ANG_VEL, *DOF_VEL]
    return _frame([qpos], [qvel], [SENSORS])


def _planar_distance(x, y):
    return math.hypot(1000.0 - x, 0.0 - y)


def test_ant_dof_limits_come_from_the_model(ant):
    hip, ank_pos, ank_neg = (-40 * DEG, 40 * DEG), (30 * DEG, 100 * DEG), (-100 * DEG, -30 * DEG)
    limits = [hip, ank_pos, hip, ank_neg, hip, ank_neg, hip, ank_pos]
    np.testing.assert_allclose(np.asarray(ant.dof_lower), [lo for lo, _ in limits], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(ant.dof_upper), [hi for _, hi in limits], rtol=1e-6)
    # rest pose: 0 for hips, the nearest limit for ankles (0 lies outside their range)
    rest = [0, 30, 0, -30, 0, -30, 0, 30]
    np.testing.assert_allclose(np.asarray(ant.initial_dof_pos), np.multiply(rest, DEG), atol=1e-7)


def test_ant_observation_every_slot(ant):
    d_prev = _planar_distance(9.0, -2.0)  # the torso was 1 m further back last step
    carry = AntCarry(f32([-d_prev / DT]), f32([0.0]))
    obs, new_carry = ant.observe(_ant_frame(), f32([ACTIONS]), carry)
    assert obs.shape == (1, 60) and obs.dtype == jnp.float32
    o = np.asarray(obs[0], np.float64)

    # 0: torso height
    assert o[0] == pytest.approx(0.5, abs=1e-7)
    # 1:4: world velocity (1, 2, 0.5) rotated by -A = +60 deg about z:
    #   x' = 1 cos60 - 2 sin60 = 0.5 - sqrt(3),  y' = 1 sin60 + 2 cos60 = sqrt(3)/2 + 1,  z' = 0.5
    np.testing.assert_allclose(o[1:4], [0.5 - SQ3, SQ3 / 2 + 1.0, 0.5], atol=1e-6)
    # 4:7: body angular velocity, unchanged
    np.testing.assert_allclose(o[4:7], ANG_VEL, atol=1e-7)
    # 7: yaw = -60 deg wrapped into [0, 2 pi) = 300 deg = 5 pi / 3
    assert o[7] == pytest.approx(5 * math.pi / 3, abs=1e-5)
    # 8: roll = 0 (pure yaw)
    assert o[8] == pytest.approx(0.0, abs=1e-6)
    # 9: angle to target = atan2(0 - 0.5, 1000 - 10) - yaw (upstream's x-z plane angle)
    assert o[9] == pytest.approx(math.atan2(-0.5, 990.0) - 5 * math.pi / 3, abs=1e-5)
    # 10: up projection: z axis stays vertical under a yaw -> 1
    assert o[10] == pytest.approx(1.0, abs=1e-6)
    # 11: heading projection = (cos A, sin A, 0) . (990, 2, 0) / |(990, 2)|
    #   = (0.5 * 990 - sqrt(3)/2 * 2) / sqrt(990^2 + 4)
    heading = (0.5 * 990.0 - SQ3 / 2 * 2.0) / math.sqrt(990.0**2 + 4.0)
    assert heading == pytest.approx(0.49825, abs=1e-5)
    assert o[11] == pytest.approx(heading, abs=1e-6)
    # 12:20: dof positions scaled to [-1, 1] by the model's limits
    np.testing.assert_allclose(o[12:20], DOF_SCALED, atol=2e-6)
    # 20:28: dof velocities * dofVelocityScale (0.2)
    np.testing.assert_allclose(o[20:28], [0.2, -0.4, 0.6, -0.8, 1.0, -1.2, 1.4, -1.6], atol=1e-6)
    # 28:52: force-torque sensors * contactForceScale (0.1): -1.2, -1.1, ..., 1.1
    np.testing.assert_allclose(o[28:52], np.arange(-12, 12) / 10.0, atol=1e-6)
    # 52:60: the actions of the step
    np.testing.assert_allclose(o[52:60], ACTIONS, atol=1e-7)

    # carry: potential of this frame = -planar distance / dt, previous = the carry's current
    d = _planar_distance(10.0, -2.0)  # sqrt(990^2 + 2^2)
    np.testing.assert_allclose(np.asarray(new_carry.potentials), [-d / DT], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(new_carry.prev_potentials), [-d_prev / DT], rtol=1e-6)


def test_ant_yaw_and_roll_of_a_tilted_torso(ant):
    # roll 30 deg about x: up vector (0, -sin30, cos30) -> up projection cos30; heading (1, 0, 0)
    r = math.pi / 6
    quat = (math.cos(r / 2), math.sin(r / 2), 0.0, 0.0)
    obs, _ = ant.observe(_ant_frame(quat=quat), f32([ACTIONS]), ant.initial_carry(1))
    o = np.asarray(obs[0], np.float64)
    assert o[8] == pytest.approx(r, abs=1e-6)  # roll
    assert o[7] == pytest.approx(0.0, abs=1e-6)  # yaw
    assert o[10] == pytest.approx(SQ3 / 2, abs=1e-6)  # up projection = cos 30 deg
    # heading (1, 0, 0) . (990, 2, 0) / sqrt(990^2 + 4)
    assert o[11] == pytest.approx(990.0 / math.sqrt(990.0**2 + 4.0), abs=1e-6)
    # world velocity (1, 2, 0.5) in a frame rolled by 30 deg: rotate by -30 deg about x:
    #   x' = 1,  y' = 2 cos30 + 0.5 sin30 = sqrt(3) + 0.25,  z' = -2 sin30 + 0.5 cos30
    np.testing.assert_allclose(o[1:4], [1.0, SQ3 + 0.25, -1.0 + 0.25 * SQ3], atol=1e-6)


def _reward_terms(obs: np.ndarray, actions, progress: float) -> float:
    """The Ant reward written out term by term (float64)."""
    a = np.asarray(actions, np.float64)
    heading = 0.5 if obs[11] > 0.8 else 0.5 * obs[11] / 0.8
    up = 0.1 if obs[10] > 0.93 else 0.0
    return (
        progress
        + 0.5  # alive
        + up
        + heading
        - 0.005 * np.sum(a**2)
        - 0.05 * np.sum(np.abs(a * obs[20:28]))
        - 0.1 * np.sum(obs[12:20] > 0.99)
    )


def test_ant_reward_by_hand(ant):
    obs = np.zeros(60)
    obs[0] = 0.5  # height
    obs[10] = 1.0  # up projection > 0.93 -> up bonus 0.1
    obs[11] = 0.4  # heading projection < 0.8 -> 0.5 * 0.4 / 0.8 = 0.25
    obs[12:20] = DOF_SCALED  # two slots above 0.99 (0.995 and 1.0)
    obs[20:28] = [0.2, -0.4, 0.6, -0.8, 1.0, -1.2, 1.4, -1.6]
    carry = AntCarry(f32([1.0]), f32([0.25]))  # progress = 1.0 - 0.25 = 0.75
    reward, done = ant.reward_and_termination(f32([obs]), f32([ACTIONS]), carry)
    # sum a^2 = 0.25 + 0.25 + 1 + 1 + 0.0625 + 0 + 0.01 + 0.04 = 2.6125
    # sum |a * v| = 0.1 + 0.2 + 0.6 + 0.8 + 0.25 + 0 + 0.14 + 0.32 = 2.41
    expected = 0.75 + 0.5 + 0.1 + 0.25 - 0.005 * 2.6125 - 0.05 * 2.41 - 0.1 * 2
    assert expected == pytest.approx(1.2664375)
    assert _reward_terms(obs, ACTIONS, 0.75) == pytest.approx(expected)
    assert float(reward[0]) == pytest.approx(expected, abs=1e-6)
    assert not bool(done[0])


@pytest.mark.parametrize(
    "up_proj, heading_proj, up_term, heading_term",
    [
        (0.94, 0.9, 0.1, 0.5),  # both above their thresholds
        (0.92, 0.9, 0.0, 0.5),  # no up bonus below 0.93
        (0.94, 0.8, 0.1, 0.5),  # 0.8 itself: 0.5 * 0.8 / 0.8 = 0.5 (continuous)
        (0.94, -0.4, 0.1, -0.25),  # facing away: 0.5 * -0.4 / 0.8
    ],
)
def test_ant_up_and_heading_terms(ant, up_proj, heading_proj, up_term, heading_term):
    obs = np.zeros((1, 60))
    obs[0, 0], obs[0, 10], obs[0, 11] = 0.5, up_proj, heading_proj
    carry = AntCarry(f32([0.0]), f32([0.0]))
    reward, _ = ant.reward_and_termination(f32(obs), jnp.zeros((1, 8)), carry)
    # zero actions, zero dofs: reward = 0.5 alive + up + heading
    assert float(reward[0]) == pytest.approx(0.5 + up_term + heading_term, abs=1e-6)


def test_ant_death_below_termination_height(ant):
    obs = np.zeros((3, 60))
    obs[:, 0] = [0.30, 0.32, 0.0]  # terminationHeight = 0.31
    obs[:, 10], obs[:, 11] = 1.0, 1.0
    carry = AntCarry(f32([5.0, 5.0, 5.0]), f32([0.0, 0.0, 0.0]))
    reward, done = ant.reward_and_termination(f32(obs), jnp.zeros((3, 8)), carry)
    np.testing.assert_array_equal(np.asarray(done), [True, False, True])
    # fallen: deathCost; standing: 5 progress + 0.5 alive + 0.1 up + 0.5 heading
    np.testing.assert_allclose(np.asarray(reward), [-2.0, 6.1, -2.0], rtol=1e-6)


def test_ant_progress_from_observe_to_reward(ant):
    """Potentials carried by observe feed the progress term: moving 1 m towards the target."""
    d_prev, d = _planar_distance(9.0, -2.0), _planar_distance(10.0, -2.0)
    carry = AntCarry(f32([-d_prev / DT]), f32([0.0]))
    actions = f32([ACTIONS])
    obs, carry = ant.observe(_ant_frame(), actions, carry)
    reward, done = ant.reward_and_termination(obs, actions, carry)
    progress = (d_prev - d) / DT  # ~ 0.999998 m / 0.0166 s = 60.24
    assert progress == pytest.approx(60.2408, abs=1e-3)
    expected = _reward_terms(np.asarray(obs[0], np.float64), ACTIONS, progress)
    # potentials are ~6e4 in float32 (ulp 4e-3): their difference is good to ~1e-2
    assert float(reward[0]) == pytest.approx(expected, abs=2e-2)
    assert not bool(done[0])


def test_ant_reset_sampling(ant):
    import jax

    qpos, qvel = ant.sample_reset(jax.random.PRNGKey(3), 64)
    qpos, qvel = np.asarray(qpos), np.asarray(qvel)
    np.testing.assert_allclose(qpos[:, :7], np.tile([0, 0, 0.44, 1, 0, 0, 0], (64, 1)), atol=1e-7)
    np.testing.assert_array_equal(qvel[:, :6], 0.0)
    rest = np.asarray(ant.initial_dof_pos)
    assert np.all(np.abs(qpos[:, 7:] - rest) <= 0.2 + 1e-6)
    assert np.all(qpos[:, 7:] >= np.asarray(ant.dof_lower) - 1e-6)
    assert np.all(qpos[:, 7:] <= np.asarray(ant.dof_upper) + 1e-6)
    assert np.all(np.abs(qvel[:, 6:]) <= 0.1)
    assert qpos[:, 7:].std(axis=0).min() > 0.01  # actually random


# --------------------------------------------------------------------------------------------
# rotations
# --------------------------------------------------------------------------------------------


def _quat_axis_angle(axis, angle):
    axis = np.asarray(axis, np.float64) / np.linalg.norm(axis)
    return np.concatenate([[math.cos(angle / 2)], math.sin(angle / 2) * axis])


@pytest.mark.parametrize(
    "axis, angle, v, expected",
    [
        ((0, 0, 1), math.pi / 2, (1, 0, 0), (0, 1, 0)),  # x -> y by +90 deg about z
        ((1, 0, 0), math.pi / 2, (0, 1, 0), (0, 0, 1)),  # y -> z by +90 deg about x
        ((0, 1, 0), math.pi / 2, (0, 0, 1), (1, 0, 0)),  # z -> x by +90 deg about y
        ((0, 0, 1), math.pi, (1, 2, 3), (-1, -2, 3)),  # half turn about z
        ((0, 0, 1), -math.pi / 3, (1, 2, 0.5), (0.5 + SQ3, 1 - SQ3 / 2, 0.5)),
        ((1, 1, 1), 2 * math.pi / 3, (1, 0, 0), (0, 1, 0)),  # cyclic x -> y -> z
    ],
)
def test_rotate_by_hand(axis, angle, v, expected):
    q = f32(_quat_axis_angle(axis, angle))
    np.testing.assert_allclose(np.asarray(rotations.rotate(q, f32(v))), expected, atol=1e-6)
    # the inverse rotation takes expected back to v
    back = rotations.rotate_inverse(q, f32(expected))
    np.testing.assert_allclose(np.asarray(back), v, atol=1e-6)


def test_rotate_matches_mujoco_and_inverts():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(32, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(32, 3))
    ref = np.empty_like(v)
    ref_inv = np.empty_like(v)
    for i in range(32):
        mujoco.mju_rotVecQuat(ref[i], v[i], q[i])
        conj = q[i] * [1, -1, -1, -1]
        mujoco.mju_rotVecQuat(ref_inv[i], v[i], conj)
    out = np.asarray(rotations.rotate(f32(q), f32(v)))
    out_inv = np.asarray(rotations.rotate_inverse(f32(q), f32(v)))
    np.testing.assert_allclose(out, ref, atol=2e-6)
    np.testing.assert_allclose(out_inv, ref_inv, atol=2e-6)
    # inverse property both ways, and rotations keep lengths
    there_back = rotations.rotate_inverse(f32(q), rotations.rotate(f32(q), f32(v)))
    back_there = rotations.rotate(f32(q), rotations.rotate_inverse(f32(q), f32(v)))
    np.testing.assert_allclose(np.asarray(there_back), v, atol=2e-6)
    np.testing.assert_allclose(np.asarray(back_there), v, atol=2e-6)
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), np.linalg.norm(v, axis=1), rtol=1e-5)
    # not the identity: the test above can fail
    assert np.abs(out - v).max() > 0.5


def _zyx_quat(roll, pitch, yaw):
    """q = qz(yaw) * qy(pitch) * qx(roll), composed with MuJoCo."""
    qx = _quat_axis_angle((1, 0, 0), roll)
    qy = _quat_axis_angle((0, 1, 0), pitch)
    qz = _quat_axis_angle((0, 0, 1), yaw)
    qzy, q = np.empty(4), np.empty(4)
    mujoco.mju_mulQuat(qzy, qz, qy)
    mujoco.mju_mulQuat(q, qzy, qx)
    return q


@pytest.mark.parametrize(
    "roll, pitch, yaw",
    [
        (0.3, 0.0, 0.0),
        (0.0, 0.4, 0.0),
        (0.0, 0.0, 1.2),
        (0.2, -0.3, 2.5),  # negative pitch wraps to 2 pi - 0.3
        (-0.5, 0.1, -2.0),  # negative roll and yaw wrap too
    ],
)
def test_euler_xyz_recovers_zyx_angles_wrapped(roll, pitch, yaw):
    q = f32(_zyx_quat(roll, pitch, yaw))
    r, p, y = (float(x) for x in rotations.euler_xyz(q))
    two_pi = 2 * math.pi
    assert r == pytest.approx(roll % two_pi, abs=2e-6)
    assert p == pytest.approx(pitch % two_pi, abs=2e-6)
    assert y == pytest.approx(yaw % two_pi, abs=2e-6)
    for angle in (r, p, y):
        assert 0.0 <= angle < two_pi


def test_euler_xyz_gimbal_lock_and_identity():
    # identity -> all zero; pitch of exactly +90 deg -> pi/2 (clamped branch)
    r, p, y = rotations.euler_xyz(f32([1.0, 0.0, 0.0, 0.0]))
    assert (float(r), float(p), float(y)) == (0.0, 0.0, 0.0)
    _, p, _ = rotations.euler_xyz(f32(_quat_axis_angle((0, 1, 0), math.pi / 2)))
    assert float(p) == pytest.approx(math.pi / 2, abs=1e-3)
    # a batch keeps its leading shape
    q = f32(np.tile(_zyx_quat(0.1, 0.2, 0.3), (2, 3, 1)))
    for angle, want in zip(rotations.euler_xyz(q), (0.1, 0.2, 0.3), strict=True):
        assert angle.shape == (2, 3)
        np.testing.assert_allclose(np.asarray(angle), want, atol=2e-6)
