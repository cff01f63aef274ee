"""FrankaCabinet: sizes, observations and rewards by hand, drives, resets, both backends,
``assets_root`` and a short PPO run.

Hand computations use float64 numpy: the Franka's forward kinematics are written out below from
the joint origins of IsaacGymEnvs' franka_panda.urdf (rotation matrices, independent of the
task's quaternion code), the reward from the formula in the task's docstring.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from isaacgymenvs_gmi.launch import plan_run, run
from isaacgymenvs_gmi.sim.model import compile_task_model
from isaacgymenvs_gmi.tasks.base import ASSETS_DIR, ModelInfo, PhysicsFrame, TaskConfigError
from isaacgymenvs_gmi.tasks.franka_cabinet import FrankaCabinet, GraspCarry
from tests.env_fixtures import rollout
from tests.helpers import f32

TASK = "FrankaCabinet"
N = 4
DEFAULT = (1.157, -1.066, -0.155, -2.239, -1.841, 1.003, 0.469, 0.035, 0.035)
LOWER = np.array([-2.8973, -1.7628, -2.8973, -3.0718, -2.8973, -0.0175, -2.8973, 0.0, 0.0])
UPPER = np.array([2.8973, 1.7628, 2.8973, -0.0698, 2.8973, 3.7525, 2.8973, 0.04, 0.04])
# URDF origins of panda_joint1..7: (xyz in the parent link, roll about x); every axis is z
ARM = (
    ((0.0, 0.0, 0.333), 0.0),
    ((0.0, 0.0, 0.0), -math.pi / 2),
    ((0.0, -0.316, 0.0), math.pi / 2),
    ((0.0825, 0.0, 0.0), math.pi / 2),
    ((-0.0825, 0.384, 0.0), -math.pi / 2),
    ((0.0, 0.0, 0.0), math.pi / 2),
    ((0.088, 0.0, 0.0), math.pi / 2),
)
HAND, FINGER = 0.107, 0.0584  # hand below link7 (turned -45 deg about z), fingers below the hand


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _franka(q):
    """World grasp point, grasp rotation matrix, left and right finger origins at dofs q (9,)."""
    p, rot = np.array([1.0, 0.0, 0.0]), _rz(math.pi)  # base at (1, 0, 0), facing -x
    for (xyz, roll), angle in zip(ARM, q[:7], strict=True):
        p = p + rot @ xyz
        rot = rot @ _rx(roll) @ _rz(angle)
    hand_p, hand_rot = p + rot @ [0.0, 0.0, HAND], rot @ _rz(-math.pi / 4)
    left = hand_p + hand_rot @ [0.0, q[7], FINGER]
    right = hand_p + hand_rot @ [0.0, -q[8], FINGER]
    # upstream: the fingers' midpoint at q = 0, + 0.04 along link7's y, turned like the fingers
    grasp = p + rot @ [0.0, 0.04, HAND + FINGER]
    return grasp, hand_rot, left, right


def _drawer_grasp(opening):
    # cabinet at z = 0.4, drawer_top at (0.0515, 0, 0.3172) in it, grasp point (0.3, 0.01, 0)
    return np.array([0.0515 + opening + 0.3, 0.01, 0.4 + 0.3172])


@pytest.fixture(scope="module")
def task(task_cfg) -> FrankaCabinet:
    cfg = task_cfg(TASK)
    model, timing = compile_task_model(FrankaCabinet, cfg)
    return FrankaCabinet(cfg["env"], timing.dt, ModelInfo.from_model(model))


# --- model (the VecTask contract on both backends: tests/sim/test_sim_contract.py) ----------------


def test_model_layout(task):
    info = task.info
    assert (info.nq, info.nv, info.nu, task.num_obs, task.num_actions) == (10, 10, 9, 23, 9)
    assert task.dof_qpos == slice(0, 9)  # consecutive columns are read as a slice
    assert task.drawer_qpos == 9 and task.drawer_qvel == 9
    np.testing.assert_allclose(np.asarray(task.dof_lower), LOWER, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(task.dof_upper), UPPER, rtol=1e-6)


# --- observations ----------------------------------------------------------------------------


def test_zero_pose_by_hand():
    # All arm joints at 0: link7 at (0.088, 0, 1.033) in the base frame, pointing down (turned by
    # pi about x); grasp point 0.1654 below it and 0.04 along -y; base turned by pi about z.
    grasp, rot, left, right = _franka(np.array([0.0] * 7 + [0.02, 0.03]))
    np.testing.assert_allclose(grasp, [1 - 0.088, 0.04, 1.033 - 0.1654], atol=1e-12)
    s = math.sqrt(0.5)  # fingers slide along the hand's y, turned by -45 deg
    np.testing.assert_allclose(left, [0.912 - 0.02 * s, 0.02 * s, 0.8676], atol=1e-12)
    np.testing.assert_allclose(right, [0.912 + 0.03 * s, -0.03 * s, 0.8676], atol=1e-12)
    np.testing.assert_allclose(rot[:, 2], [0.0, 0.0, -1.0], atol=1e-12)  # forward: down
    np.testing.assert_allclose(rot[:, 1], [-s, s, 0.0], atol=1e-12)  # up: horizontal


def test_observation_every_slot(task):
    rng = np.random.default_rng(3)
    dofs = np.stack(
        [[0.0] * 7 + [0.02, 0.03], DEFAULT, rng.uniform(LOWER, UPPER), rng.uniform(LOWER, UPPER)]
    )
    openings = np.array([0.1, 0.0, 0.25, 0.38])
    qpos = np.concatenate([dofs, openings[:, None]], axis=1)
    qvel = np.arange(40, dtype=np.float64).reshape(4, 10) / 10.0 - 2.0
    frame = PhysicsFrame(f32(qpos), f32(qvel), jnp.zeros((4, 0)))
    obs, carry = task.observe(frame, jnp.zeros((4, 9)), task.initial_carry(4))
    assert obs.shape == (4, 23) and obs.dtype == jnp.float32
    o = np.asarray(obs, np.float64)
    # 0:9 dof positions scaled to [-1, 1]; 9:18 dof velocities * 0.1
    np.testing.assert_allclose(o[:, :9], 2 * (dofs - LOWER) / (UPPER - LOWER) - 1, atol=2e-6)
    np.testing.assert_allclose(o[:, 9:18], qvel[:, :9] * 0.1, atol=1e-6)
    for i in range(4):
        grasp, rot, left, right = _franka(dofs[i])
        handle = _drawer_grasp(openings[i])
        np.testing.assert_allclose(o[i, 18:21], handle - grasp, atol=2e-6)  # to the handle
        assert o[i, 21] == pytest.approx(openings[i], abs=1e-7)  # drawer opening
        assert o[i, 22] == pytest.approx(qvel[i, 9], abs=1e-7)  # drawer velocity
        # forward (z) . drawer inward (-x), up (y) . drawer up (z)
        np.testing.assert_allclose(_row(carry.dots, i), [-rot[0, 2], rot[2, 1]], atol=2e-6)
        np.testing.assert_allclose(_row(carry.left, i), left, atol=2e-6)
        np.testing.assert_allclose(_row(carry.right, i), right, atol=2e-6)
        np.testing.assert_allclose(_row(carry.handle, i), handle, atol=2e-6)
    # the default pose is aimed at the drawer: forward points 64 deg off inward, up nearly up
    np.testing.assert_allclose(_row(carry.dots, 1), [0.4369, 0.9912], atol=1e-3)


def _row(components, i):
    """Env i of a component tuple (arrays (N,), or floats the model fixes)."""
    return [float(np.broadcast_to(np.asarray(c), (4,))[i]) for c in components]


# --- rewards ---------------------------------------------------------------------------------

HANDLE = (0.6, 0.01, 0.72)
D_CLOSE = (0.006, 0.0, 0.008)  # |d| = 0.01 <= 0.02: distance reward doubled
DIST_CLOSE = 2 * (1 / (1 + 0.01**2)) ** 2  # = 1.99960006
AROUND = ((0.61, 0.73), (0.61, 0.70))  # (x, z) of the left finger 1 cm above, right 2 cm below
FINGER_CLOSE = (0.04 - 0.01) + (0.04 - 0.02)  # = 0.05

# fmt: off
REWARD_CASES = {
    # name: (handle - grasp, (f, u), fingers' (x, z), opening, action, reward, terminated)
    # around the handle, drawer at 0.25: + 0.5 (> 0.01) + h (> 0.2); actions (0.5, -0.5)
    "around_quarter_open": (D_CLOSE, (0.8, -0.6), AROUND, 0.25, 0.5,
        2 * DIST_CLOSE + 0.5 * 0.5 * (0.64 - 0.36) + 0.25 * 0.5 + 7.5 * (0.25 * 0.5 + 0.25)
        + 5 * FINGER_CLOSE - 0.01 * 0.5 + 0.5 + 0.5, False),
    # far (|d| = 0.5), left finger below the handle: no around terms; drawer at 0.005: no bonus
    "far_closed": ((0.3, 0.0, 0.4), (-0.5, 0.2), ((0.61, 0.71), (0.61, 0.70)), 0.005, 0.0,
        2 * (1 / 1.25) ** 2 + 0.5 * 0.5 * (-0.25 + 0.04) + 7.5 * 0.005, False),
    # |d| = 0.021 > 0.02: not doubled; fingers swapped (left below, right above): not around
    "near_swapped": ((0.021, 0.0, 0.0), (1.0, 1.0), ((0.61, 0.70), (0.61, 0.73)), 0.1, 0.0,
        2 * (1 / (1 + 0.021**2)) ** 2 + 0.5 * 0.5 * (1 + 1) + 7.5 * 0.1 + 0.5, False),
    # opened past 0.39: all three bonuses (0.5 + h + 2h) and the episode ends
    "open_terminates": (D_CLOSE, (1.0, 1.0), AROUND, 0.395, 0.0,
        2 * DIST_CLOSE + 0.5 + 0.25 * 0.5 + 7.5 * 0.395 * 1.5 + 5 * FINGER_CLOSE + 0.5 + 0.5 + 1.0,
        True),
    # 0.39 itself does not end the episode (strict >), nor add the 2h bonus
    "at_threshold": (D_CLOSE, (1.0, 1.0), AROUND, 0.39, 0.0,
        2 * DIST_CLOSE + 0.5 + 0.25 * 0.5 + 7.5 * 0.39 * 1.5 + 5 * FINGER_CLOSE + 0.5 + 0.5, False),
    # a finger more than 0.04 behind the drawer grasp point (x < 0.56): -1 replaces everything
    "left_behind": (D_CLOSE, (1.0, 1.0), ((0.559, 0.73), (0.61, 0.70)), 0.25, 0.0, -1.0, False),
    "right_behind": (D_CLOSE, (1.0, 1.0), ((0.61, 0.73), (0.55, 0.70)), 0.395, 0.0, -1.0, True),
    "just_in_front": (D_CLOSE, (0.0, 0.0), ((0.561, 0.73), (0.561, 0.70)), 0.0, 0.0,
        2 * DIST_CLOSE + 0.25 * 0.5 + 5 * FINGER_CLOSE, False),
}
# fmt: on


@pytest.mark.parametrize("case", list(REWARD_CASES))
def test_reward_by_hand(task, case):
    to_target, dots, fingers, opening, act, expected, done = REWARD_CASES[case]
    obs = np.zeros((1, 23))
    obs[0, 18:21], obs[0, 21] = to_target, opening
    (lx, lz), (rx, rz) = fingers
    carry = GraspCarry(
        tuple(f32([x]) for x in dots),
        (f32([lx]), 0.0, f32([lz])),
        (f32([rx]), 0.0, f32([rz])),
        tuple(f32([x]) for x in HANDLE),
    )
    actions = np.zeros((1, 9))
    actions[0, :2] = act, -act
    reward, terminated = task.reward_and_termination(f32(obs), f32(actions), carry)
    assert reward.dtype == jnp.float32
    assert float(reward[0]) == pytest.approx(expected, abs=2e-5)
    assert bool(terminated[0]) is done


def test_reward_case_values():
    # the first case spelled out: 3.99920012 + 0.07 + 0.125 + 2.8125 + 0.25 - 0.005 + 1.0
    assert REWARD_CASES["around_quarter_open"][5] == pytest.approx(8.25170012, abs=1e-8)
    assert REWARD_CASES["far_closed"][5] == pytest.approx(1.28 - 0.0525 + 0.0375)


# --- drives, resets, episode length ----------------------------------------------------------


def test_drives_move_targets_like_upstream(task_cfg):
    """One step of action a moves the position target by actionScale * speed * a / 60, clamped to
    the joint limits; drives have upstream's stiffness, damping and effort."""
    cfg = task_cfg(TASK)
    model, timing = compile_task_model(FrankaCabinet, cfg)
    logic = FrankaCabinet(cfg["env"], timing.dt, ModelInfo.from_model(model))
    np.testing.assert_allclose(model.actuator_gainprm[:, 0], [400.0] * 7 + [5000.0] * 2)
    np.testing.assert_allclose(model.dof_damping, [80.0] * 7 + [100.0] * 2 + [10.0])
    np.testing.assert_allclose(model.actuator_forcerange[:, 1], [87] * 4 + [12] * 3 + [200] * 2)
    np.testing.assert_allclose(model.actuator_actrange, np.stack([LOWER, UPPER], 1), rtol=1e-6)
    assert (model.body_gravcomp[1:12] == 1.0).all()  # upstream disables the Franka's gravity
    data = mujoco.MjData(model)
    data.qpos[:9] = data.act[:] = DEFAULT
    action = np.array([1.0, -1.0, 0.5, 1.0, 0.0, -0.2, 1.0, -1.0, 1.0])
    data.ctrl[:] = action * logic.action_scale()
    mujoco.mj_step(model, data)
    step = 7.5 * np.array([1.0] * 7 + [0.1] * 2) * action / 60.0  # e.g. 0.125 rad at a = 1
    expected = np.minimum(np.asarray(DEFAULT) + step, UPPER)  # the right finger: 0.04, clamped
    assert expected[8] == 0.04
    np.testing.assert_allclose(data.act, expected, atol=1e-12)


def test_reset_sampling(task):
    qpos, qvel = task.sample_reset(jax.random.PRNGKey(1), 256)
    qpos, qvel = np.asarray(qpos, np.float64), np.asarray(qvel)
    noise = qpos[:, :9] - DEFAULT
    inside = (qpos[:, :9] > LOWER + 1e-6) & (qpos[:, :9] < UPPER - 1e-6)
    assert np.all(np.abs(noise[inside]) <= 0.125 + 1e-6)  # default + 0.25 * (U(0, 1) - 0.5)
    assert np.all(qpos[:, :9] >= LOWER - 1e-6) and np.all(qpos[:, :9] <= UPPER + 1e-6)
    assert np.isclose(qpos[:, 7:9], 0.04).any()  # 0.035 + up to 0.125: often clamped open
    assert noise[:, :7].std(axis=0).min() > 0.05  # actually random
    np.testing.assert_array_equal(qpos[:, 9], 0.0)  # drawer closed, at rest
    np.testing.assert_array_equal(qvel, 0.0)


def test_arm_holds_its_reset_pose(shared_env, restart_env, step_env):
    """Zero actions keep the targets at the reset pose: no gravity sag, no drift."""
    env = shared_env(TASK, "mujoco")
    first = restart_env(env)
    for _ in range(30):
        obs, _, reset, _ = step_env(env, np.zeros((N, 9)))
        assert not reset.any()
    np.testing.assert_allclose(obs["obs"][:, :9], first[:, :9], atol=1e-3)
    assert obs["obs"][:, 9:18].abs().max() < 1e-3


def test_episode_ends_after_499_steps(shared_env, restart_env, step_env):
    env = shared_env(TASK, "mujoco")
    restart_env(env)
    for step in range(1, 500):
        _, _, reset, extras = step_env(env, np.zeros((N, 9)))
        assert bool(reset.any()) is (step == 499), step
    assert extras["time_outs"].all()
    assert (extras["episode_length"] == 499).all()


def test_start_noise_must_stay_zero(task_cfg):
    cfg = task_cfg(TASK)
    FrankaCabinet.check_config(cfg["env"])  # upstream's defaults pass
    with pytest.raises(TaskConfigError, match="startPositionNoise"):
        FrankaCabinet.check_config({**cfg["env"], "startPositionNoise": 0.1})


# --- backend agreement -----------------------------------------------------------------------
# Measured on a 2-core CPU, 60 steps, 4 envs (max |difference| over observations and rewards):
# random actions from the seed-0 reset pose (no contact): arm columns 1.3e-5, rewards 1e-6, the
# fingers' columns 5e-3 (scaled position: 0.1 mm of their 4 cm travel; float32 rounding, driven
# by kp 5000 against the joint limits); the hand pushing a quarter-open drawer shut (contact;
# worst in the drawer velocity slot) 5e-4, rewards 2e-4, the fingers 6e-3. Tolerances 1e-4,
# 1e-5, 2e-2 (fingers) without contact; 3e-3, 2e-2 (fingers) with it.
FINGER_COLUMNS = [7, 8, 16, 17]  # scaled positions and velocities of the two fingers
PUSH = (0.164, 0.226, -0.5, -0.02, 0.078, 0.187, -0.05, 0.0, 0.0)  # grasp point towards -x, down


def _opened(env, restart, opening):
    """The seed-0 reset state with the drawer pulled out by ``opening``: (qpos, qvel)."""
    restart(env)
    qpos, qvel = (np.array(x) for x in env.backend.physics_state())
    qpos[:, 9] = opening
    return qpos, qvel


def test_backends_agree(shared_env, restart_env):
    c, x = shared_env(TASK, "mujoco"), shared_env(TASK, "mjx")
    actions = np.random.default_rng(0).normal(0.0, 0.5, (60, N, 9))
    free_c, rew_c, _ = rollout(c, actions)
    free_x, rew_x, _ = rollout(x, actions)
    assert np.abs(free_c[-1, :, :9] - free_c[0, :, :9]).max() > 0.1  # the arm moved
    error = np.abs(free_c - free_x)
    assert np.delete(error, FINGER_COLUMNS, axis=2).max() < 1e-4
    assert error[:, :, FINGER_COLUMNS].max() < 2e-2
    assert np.abs(rew_c - rew_x).max() < 1e-5

    push = np.tile(np.asarray(PUSH), (60, N, 1))
    push_c, rew_c, _ = rollout(c, push, _opened(c, restart_env, 0.25))
    push_x, rew_x, _ = rollout(x, push, _opened(c, restart_env, 0.25))
    assert push_c[-1, :, 21].min() < 0.05 and push_c[:, :, 22].min() < -0.5  # pushed shut
    error = np.abs(push_c - push_x)
    assert np.delete(error, FINGER_COLUMNS, axis=2).max() < 3e-3
    assert error[:, :, FINGER_COLUMNS].max() < 2e-2
    assert np.abs(rew_c - rew_x).max() < 3e-3


# --- assets_root -----------------------------------------------------------------------------


def test_assets_root_loads_one_combined_file(task_cfg, tmp_path):
    text = (ASSETS_DIR / "franka_cabinet.xml").read_text()
    handle = 'size="0.009" fromto="0.303 -0.075 0.01 0.303 0.075 0.01"'
    assert handle in text
    (tmp_path / "mjcf").mkdir()
    thick = handle.replace('size="0.009"', 'size="0.012"')
    (tmp_path / "mjcf" / "kitchen.xml").write_text(text.replace(handle, thick))
    cfg = task_cfg(TASK)
    cfg["env"]["asset"]["assetFileName"] = "mjcf/kitchen.xml"
    model, _ = compile_task_model(FrankaCabinet, cfg, assets_root=str(tmp_path))
    handles = [g for g in range(model.ngeom) if model.geom_type[g] == mujoco.mjtGeom.mjGEOM_CAPSULE]
    assert 0.012 in model.geom_size[handles, 0]  # the file's handle, not ours
    # the task's edits: drives, grasp sites, gravity compensation, collision filter
    assert model.nu == 9 and model.na == 9 and model.nsite == 4
    assert (model.body_gravcomp[1:12] == 1.0).all()
    assert (model.geom_contype > 0).sum() == 3 and (model.geom_conaffinity > 0).sum() == 2


def test_assets_root_refuses_the_franka_file_alone(task_cfg, compose_cfg, tmp_path):
    # by default assetFileName points at upstream's Franka file, which lacks the cabinet
    cfg = compose_cfg(f"task={TASK}")
    asset = cfg.task.env.asset
    assert asset.assetFileName == asset.assetFileNameFranka
    path = tmp_path / asset.assetFileNameFranka
    path.parent.mkdir(parents=True)
    path.write_text(
        '<robot name="panda"><link name="panda_link0"/><link name="panda_link1">'
        '<inertial><mass value="1"/></inertial></link><joint name="panda_joint1" '
        'type="revolute"><parent link="panda_link0"/><child link="panda_link1"/>'
        '<axis xyz="0 0 1"/><limit lower="-2.9" upper="2.9" effort="87" velocity="2"/>'
        "</joint></robot>"
    )
    plain = task_cfg(TASK)
    plain["env"]["asset"]["assetFileName"] = asset.assetFileNameFranka
    with pytest.raises(ValueError, match="assetFileNameCabinet") as err:
        compile_task_model(FrankaCabinet, plain, assets_root=str(tmp_path))
    assert "assetFileNameFranka" in str(err.value) and "drawer_top_joint" in str(err.value)


# --- PPO -------------------------------------------------------------------------------------


def test_ppo_learns_to_reach(compose_cfg, tmp_path):
    """PPO with FrankaCabinetPPO's settings; overrides: 256 envs, minibatch 1024, episodes of 64
    steps (episodeLength=65), 16 epochs: 256 x 16 x 16 = 65,536 env steps, seed 0. Episodes end
    every 4th epoch; their mean returns rise as the arm learns to reach for the handle: 98.2,
    105.9, 110.2, 112.3 (seeds 1 and 2: 98.9 -> 115.1, 98.0 -> 115.2). About 15 s alone on a
    2-core CPU, start-up and JIT compiles included."""
    cfg = compose_cfg(
        f"task={TASK}",
        "num_envs=256",
        "train.params.config.minibatch_size=1024",
        "task.env.episodeLength=65",
        "max_iterations=16",
        "seed=0",
        f"train_dir={tmp_path}",
    )
    result = run(cfg, plan_run(cfg))
    rewards = [r for _, _, r in result.history]
    assert len(rewards) == 4 and all(math.isfinite(r) for r in rewards)
    assert min(rewards[1:]) > rewards[0], f"reward fell below the first episodes': {rewards}"
    assert sum(rewards[2:]) / 2 > rewards[0] + 8.0, f"reward did not rise: {rewards}"
    assert result.frames == 16 * 16 * 256
