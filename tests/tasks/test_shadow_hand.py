"""ShadowHand: env contract on both backends, observations and rewards worked out by hand, goal
bookkeeping, resets, refused settings, assets_root, backend agreement and a short PPO run.

Hand-computed tests call the task's pure JAX functions on crafted frames (numpy -> float32 JAX)
and compare with float64 arithmetic written out in the test.
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
from isaacgymenvs_gmi.tasks.shadow_hand import FINGERTIPS, HandCarry, ShadowHand
from tests.env_fixtures import rollout
from tests.helpers import f32

DT = 0.01667
GOAL = np.array([0.0, -0.39, 0.56])
S2 = math.sqrt(0.5)


@pytest.fixture(scope="module")
def model(task_cfg) -> mujoco.MjModel:
    return compile_task_model(ShadowHand, task_cfg("ShadowHand"))[0]


@pytest.fixture(scope="module")
def make_task(model, task_cfg):
    """``make_task(**env_overrides)`` -> a ShadowHand over the bundled model."""
    info = ModelInfo.from_model(model)
    return lambda **env: ShadowHand(task_cfg("ShadowHand", **env)["env"], DT, info)


def _carry(goal_wxyz, reached=False, successes=0.0, steps=0) -> HandCarry:
    n = len(goal_wxyz)
    return HandCarry(
        f32(goal_wxyz),
        jnp.tile(jax.random.PRNGKey(7), (n, 1)),
        jnp.full((n,), reached),
        jnp.full((n,), successes, jnp.float32),
        jnp.full((n,), steps, jnp.int32),
    )


def _zquat(deg: float) -> list[float]:
    """(w, x, y, z) of a rotation by ``deg`` about z."""
    return [math.cos(math.radians(deg) / 2), 0.0, 0.0, math.sin(math.radians(deg) / 2)]


# A crafted frame: dof k at fraction (k + 1) / 25 of its range, the cube at P turned 90 deg
# about z, moving with V and spinning about its own x axis; the goal turned 60 deg about z.
P, V = (0.01, -0.38, 0.55), (0.1, -0.2, 0.3)
SENSORS = np.arange(54) / 100.0  # 24 dof forces, then force and torque of each fingertip
ACTIONS = np.linspace(-1.0, 1.0, 20)


def _frame(model, dof_fraction=None, dof_vel=None) -> PhysicsFrame:
    lo, hi = model.jnt_range[:24, 0], model.jnt_range[:24, 1]
    frac = np.arange(1, 25) / 25.0 if dof_fraction is None else dof_fraction
    qpos = np.concatenate([lo + frac * (hi - lo), P, _zquat(90)])
    dv = 0.1 * (np.arange(24) - 12.0) if dof_vel is None else dof_vel
    qvel = np.concatenate([dv, V, [1.0, 0.0, 0.0]])
    return PhysicsFrame(f32([qpos]), f32([qvel]), f32([SENSORS]))


def test_full_state_observation_by_hand(model, make_task):
    task = make_task()
    obs, carry = task.observe(_frame(model), f32([ACTIONS]), _carry([_zquat(60)], steps=3))
    assert obs.shape == (1, 211) and obs.dtype == jnp.float32
    o = np.asarray(obs[0], np.float64)
    k = np.arange(24)
    np.testing.assert_allclose(o[0:24], 2 * (k + 1) / 25 - 1, atol=2e-6)  # unscaled to [-1, 1]
    np.testing.assert_allclose(o[24:48], 0.2 * 0.1 * (k - 12), atol=1e-6)  # velObsScale 0.2
    np.testing.assert_allclose(o[48:72], 10 * SENSORS[:24], atol=1e-6)  # forceTorqueObsScale
    # cube position, then its orientation in Isaac Gym's (x, y, z, w) order
    np.testing.assert_allclose(o[72:79], [*P, 0, 0, S2, S2], atol=1e-6)
    np.testing.assert_allclose(o[79:82], V, atol=1e-7)
    # body-frame spin (1, 0, 0) turned 90 deg about z is (0, 1, 0) in the world; * 0.2
    np.testing.assert_allclose(o[82:85], [0.0, 0.2, 0.0], atol=1e-6)
    # goal: position 4 cm below the cube's start, orientation 60 deg about z
    np.testing.assert_allclose(o[85:92], [*GOAL, 0, 0, 0.5, math.sqrt(3) / 2], atol=1e-6)
    # q_cube * conj(q_goal) = 30 deg about z
    s, c = math.sin(math.radians(15)), math.cos(math.radians(15))
    np.testing.assert_allclose(o[92:96], [0, 0, s, c], atol=1e-6)
    np.testing.assert_allclose(o[161:191], 10 * SENSORS[24:], atol=1e-6)
    np.testing.assert_allclose(o[191:211], ACTIONS, atol=1e-7)
    # 30 deg from the goal: not reached (successTolerance 0.1 rad)
    assert not bool(carry.reached[0]) and int(carry.steps[0]) == 4
    assert float(carry.successes[0]) == 0.0


def test_fingertip_states_by_hand_and_against_mujoco(model, make_task):
    task = make_task()
    # zero pose, only FFJ1 turning at 2 rad/s. The mount at (0, 0, 0.5) maps its (x, y, z) to
    # world (-x, -z, -y); the first distal frame sits at (0.033, 0.01, 0.256 + 0.034 + 0.095 +
    # 0.045 + 0.025) in it, 0.025 past the FFJ1 axis (mount x = world -x) along world -y.
    dof_vel = np.zeros(24)
    dof_vel[4] = 2.0
    frame = _frame(model, dof_fraction=0.0, dof_vel=dof_vel)
    frame = frame._replace(qpos=frame.qpos.at[0, :24].set(0.0))
    o = np.asarray(task.observe(frame, f32([ACTIONS]), _carry([_zquat(0)]))[0][0], np.float64)
    # (upstream's mount angles 1.5708 and 3.14159 are pi/2 and pi to 4e-6)
    np.testing.assert_allclose(o[96:99], [-0.033, -0.455, 0.49], atol=5e-6)
    # v = w x r = (-2, 0, 0) x (0, -0.025, 0) = (0, 0, 0.05)
    np.testing.assert_allclose(o[103:109], [0, 0, 0.05, -2, 0, 0], atol=2e-5)
    # any pose and velocity: every tip's frame as MuJoCo computes it (float64)
    rng = np.random.default_rng(1)
    frame = _frame(model, rng.uniform(0, 1, 24), rng.normal(0, 2, 24))
    o = np.asarray(task.observe(frame, f32([ACTIONS]), _carry([_zquat(0)]))[0][0], np.float64)
    data = mujoco.MjData(model)
    data.qpos[:], data.qvel[:] = np.asarray(frame.qpos[0]), np.asarray(frame.qvel[0])
    mujoco.mj_forward(model, data)
    for i, body in enumerate(FINGERTIPS):
        got = o[96 + 13 * i : 109 + 13 * i]
        site = model.site(f"{body}_frame").id
        quat, vel = np.zeros(4), np.zeros(6)
        mujoco.mju_mat2Quat(quat, data.site_xmat[site])
        mujoco.mj_objectVelocity(model, data, mujoco.mjtObj.mjOBJ_SITE, site, vel, 0)
        np.testing.assert_allclose(got[0:3], data.site_xpos[site], atol=2e-6)
        sign = np.sign(np.dot(got[3:7], quat[[1, 2, 3, 0]]))
        np.testing.assert_allclose(got[3:7], sign * quat[[1, 2, 3, 0]], atol=2e-6)
        np.testing.assert_allclose(got[7:13], np.r_[vel[3:], vel[:3]], atol=2e-5)


@pytest.mark.parametrize("obs_type, size", [("openai", 42), ("full_no_vel", 77), ("full", 157)])
def test_other_observation_types_are_slices_of_full_state(model, make_task, obs_type, size):
    full, _ = make_task().observe(_frame(model), f32([ACTIONS]), _carry([_zquat(60)]))
    task = make_task(observationType=obs_type)
    obs, _ = task.observe(_frame(model), f32([ACTIONS]), _carry([_zquat(60)]))
    assert task.num_obs == size and obs.shape == (1, size)
    tip_pos = np.r_[[np.arange(96 + 13 * i, 99 + 13 * i) for i in range(5)]].ravel()
    cols = {
        "openai": np.r_[tip_pos, 72:75, 92:96, 191:211],
        "full_no_vel": np.r_[0:24, 72:79, 85:96, tip_pos, 191:211],
        "full": np.r_[0:48, 72:161, 191:211],
    }[obs_type]
    np.testing.assert_allclose(np.asarray(obs[0]), np.asarray(full[0])[cols], atol=1e-6)


def _obs(pos, quat_diff_xyzw) -> np.ndarray:
    o = np.zeros(211)
    o[72:75], o[92:96] = pos, quat_diff_xyzw
    return o


def _reward(task, rows, reached=False, successes=0.0, steps=1):
    carry = _carry([_zquat(0)] * len(rows), reached, successes, steps)
    reward, done = task.reward_and_termination(f32(rows), f32([ACTIONS] * len(rows)), carry)
    return np.asarray(reward, np.float64), np.asarray(done)


def test_reward_by_hand(make_task):
    task = make_task()
    s, c = math.sin(math.radians(15)), math.cos(math.radians(15))
    near = _obs(GOAL + [0.03, -0.04, 0.0], [0, 0, s, c])  # 5 cm off, turned 30 deg
    penalty = -0.0002 * np.sum(ACTIONS**2)  # actionPenaltyScale * sum(a^2)
    expected = -10.0 * 0.05 + 1.0 / (math.pi / 6 + 0.1) + penalty
    reward, done = _reward(task, [near])
    assert reward[0] == pytest.approx(expected, abs=1e-5) and not done[0]
    # a goal reached in this frame: + reachGoalBonus 250
    reward, done = _reward(task, [near], reached=True)
    assert reward[0] == pytest.approx(expected + 250.0, abs=1e-4) and not done[0]
    # |xyz| of the quaternion difference rounded above 1: the angle is pi, not NaN
    reward, _ = _reward(task, [_obs(GOAL, [1.0000001, 0, 0, 0])])
    assert reward[0] == pytest.approx(1.0 / (math.pi + 0.1) + penalty, abs=1e-5)


@pytest.mark.parametrize("drop, fell", [(0.2401, True), (0.2399, False), (0.3, True)])
def test_fall_resets_with_fall_penalty(make_task, drop, fell):
    task = make_task(fallPenalty=-50.0)
    reward, done = _reward(task, [_obs(GOAL - [0, 0, drop], [0, 0, 0, 1])])
    expected = -10.0 * drop + 1.0 / 0.1 - 0.0002 * np.sum(ACTIONS**2) - 50.0 * fell
    assert bool(done[0]) is fell and reward[0] == pytest.approx(expected, abs=1e-4)
    # the default config's fallPenalty is 0: a reset without a penalty
    assert make_task().fall_penalty == 0.0 and make_task().fall_distance == 0.24


def test_max_consecutive_successes_and_run_out_penalty(make_task):
    task = make_task(maxConsecutiveSuccesses=3, fallPenalty=-50.0)
    still = _obs(GOAL, [0, 0, 0, 1])
    base = 1.0 / 0.1 - 0.0002 * np.sum(ACTIONS**2)
    for successes, steps, done, extra in [
        (2.0, 598, False, 0.0),
        (3.0, 10, True, 0.0),  # the third success ends the episode
        (0.0, 599, True, -25.0),  # out of steps (600 - 1, the timeout rule): 0.5 * fallPenalty
    ]:
        reward, d = _reward(task, [still], successes=successes, steps=steps)
        assert bool(d[0]) is done and reward[0] == pytest.approx(base + extra, abs=1e-4)
    # without the rule (the default) neither counts: the env's time limit ends episodes
    reward, d = _reward(make_task(fallPenalty=-50.0), [still], successes=9.0, steps=600)
    assert not d[0] and reward[0] == pytest.approx(base, abs=1e-4)
    assert task.episode_steps == 600 and task.max_episode_length == 4 * 600


def test_goal_bookkeeping_in_observe(model, make_task):
    task = make_task()
    frame = _frame(model)  # the cube turned 90 deg about z
    actions = f32([ACTIONS])
    # the first frame of an episode never counts, even on the goal
    _, carry = task.observe(frame, actions, _carry([_zquat(90)], steps=-1))
    assert not carry.reached[0] and int(carry.steps[0]) == 0
    # later frames on the goal do: counted, and the bonus paid for that frame
    obs, carry = task.observe(frame, actions, carry)
    assert carry.reached[0] and float(carry.successes[0]) == 1.0 and int(carry.steps[0]) == 1
    reward, _ = task.reward_and_termination(obs, actions, carry)
    assert float(reward[0]) > 250.0
    # the next observation comes with a new random goal and a new key
    obs2, carry2 = task.observe(frame, actions, carry)
    assert not np.allclose(np.asarray(carry2.goal_quat), np.asarray(carry.goal_quat))
    assert not np.array_equal(np.asarray(carry2.key), np.asarray(carry.key))
    np.testing.assert_allclose(obs2[0, 88:92], [*carry2.goal_quat[0, 1:], carry2.goal_quat[0, 0]])
    assert not carry2.reached[0] and float(carry2.successes[0]) == 1.0
    # with maxConsecutiveSuccesses a success restarts the step count
    _, carry = make_task(maxConsecutiveSuccesses=5).observe(
        frame, actions, _carry([_zquat(90)], steps=40)
    )
    assert carry.reached[0] and int(carry.steps[0]) == 0


def _product_of_x_and_y_turns(q: np.ndarray) -> bool:
    """rot_x(a) * rot_y(b) = (ca cb, sa cb, ca sb, sa sb) in (w, x, y, z): w z = x y."""
    unit = np.allclose(np.linalg.norm(q, axis=1), 1.0, atol=1e-6)
    return unit and np.allclose(q[:, 0] * q[:, 3], q[:, 1] * q[:, 2], atol=1e-6)


def test_reset_sampling_and_fresh_goals(model, make_task):
    task = make_task()
    qpos, qvel = task.sample_reset(jax.random.PRNGKey(3), 256)
    q, v = np.asarray(qpos, np.float64), np.asarray(qvel)
    assert np.abs(q[:, 24:27] - [0.0, -0.39, 0.6]).max() <= 0.01 + 1e-6  # resetPositionNoise
    assert _product_of_x_and_y_turns(q[:, 27:31]) and q[:, 27:31].std(axis=0).min() > 0.1
    lo, hi = model.jnt_range[:24, 0], model.jnt_range[:24, 1]
    assert np.all(q[:, :24] >= 0.2 * lo - 1e-6) and np.all(q[:, :24] <= 0.2 * hi + 1e-6)
    assert q[:, :24].std(axis=0).min() > 0.01 and not v.any()  # resetDofVelRandomInterval 0
    frame = PhysicsFrame(qpos, qvel, jnp.zeros((256, model.nsensordata)))
    carry = task.reset_carry(task.initial_carry(256), frame, jax.random.PRNGKey(4))
    goals = np.asarray(carry.goal_quat, np.float64)
    assert _product_of_x_and_y_turns(goals) and len(np.unique(goals.round(6), axis=0)) == 256
    assert not np.asarray(carry.reached).any() and (np.asarray(carry.steps) == -1).all()
    again = task.reset_carry(task.initial_carry(256), frame, jax.random.PRNGKey(4))
    np.testing.assert_array_equal(np.asarray(again.goal_quat), goals)  # reproducible per key
    typed = task.reset_carry(task.initial_carry(256), frame, jax.random.key(4))
    np.testing.assert_array_equal(np.asarray(typed.goal_quat), goals)  # new-style keys alike
    other = task.reset_carry(task.initial_carry(256), frame, jax.random.PRNGKey(5))
    assert not np.allclose(np.asarray(other.goal_quat), goals)


def test_actions_are_absolute_targets_and_sensors_follow_dof_order(model, make_task):
    task = make_task()
    logic_joint = [model.actuator_trnid[k, 0] for k in np.argsort(model.actuator_trnid[:, 0])]
    lo, hi = model.jnt_range[logic_joint, 0], model.jnt_range[logic_joint, 1]
    assert [model.joint(j).name for j in range(24) if j not in logic_joint] == [
        f"robot0:{f}FJ0" for f in "FMRL"
    ]
    np.testing.assert_allclose(task.action_offset() - task.action_scale(), lo)  # a = -1
    np.testing.assert_allclose(task.action_offset() + task.action_scale(), hi)  # a = +1
    data = mujoco.MjData(model)
    data.ctrl[:] = np.linspace(-0.3, 0.3, 20)
    mujoco.mj_forward(model, data)
    np.testing.assert_allclose(data.sensordata[:24], data.qfrc_actuator[:24], atol=1e-12)
    assert np.abs(data.sensordata[:24]).max() > 0.05


def test_refused_settings_name_their_key(task_cfg):
    for key, value in [
        ("observationType", "pixels"),
        ("objectType", "pen"),
        ("asymmetric_observations", True),
        ("useRelativeControl", True),
        ("actionsMovingAverage", 0.5),
        ("forceScale", 1.0),
    ]:
        with pytest.raises(TaskConfigError, match=f"task.env.{key}="):
            ShadowHand.check_config(task_cfg("ShadowHand", **{key: value})["env"])
    ShadowHand.check_config(task_cfg("ShadowHand")["env"])  # the shipped config passes


def test_episode_length_from_reset_time(make_task):
    assert make_task().max_episode_length == 600
    assert make_task(resetTime=5.0).max_episode_length == 300  # 5 s / (1 * 0.01667 s)


def test_assets_root(task_cfg, tmp_path):
    text = (ASSETS_DIR / "shadow_hand.xml").read_text()
    cube = 'size="0.025 0.025 0.025"'
    assert cube in text
    (tmp_path / "mjcf").mkdir()
    (tmp_path / "mjcf" / "my_hand.xml").write_text(text.replace(cube, 'size="0.03 0.03 0.03"'))
    cfg = task_cfg("ShadowHand")
    cfg["env"]["asset"]["assetFileName"] = "mjcf/my_hand.xml"
    model, _ = compile_task_model(ShadowHand, cfg, assets_root=str(tmp_path))
    np.testing.assert_allclose(model.geom("object").size, 0.03)  # not the bundled 0.025
    # the task's edits applied: 24 dof-force + 5 x (force, torque) sensors, gravity compensation
    assert model.nsensordata == 24 + 30 and model.nu == 20
    assert model.body_gravcomp[model.body("robot0:palm").id] == 1.0
    assert model.body_gravcomp[model.body("object").id] == 0.0
    # a hand without the cube (like upstream's hand file, whose cube is a separate asset)
    start = text.index("    <!-- the manipulated cube")
    no_cube = text[:start] + text[text.index("  </worldbody>") :]
    (tmp_path / "mjcf" / "hand_only.xml").write_text(no_cube)
    cfg["env"]["asset"]["assetFileName"] = "mjcf/hand_only.xml"
    with pytest.raises(TaskConfigError, match="task.env.asset.assetFileName='mjcf/hand_only"):
        compile_task_model(ShadowHand, cfg, assets_root=str(tmp_path))


def test_backends_agree(shared_env, restart_env, step_env):
    """MuJoCo (float64) and MJX (float32) from the same states under the same actions.

    Contacts make the two drift apart: MJX's box-box manifold has 4 points where the C engine
    finds 3, so a landing cube bounces differently (errors of ~0.5 within 10 steps). Compared:
    (a) the hand under random actions while the cube flies past it (no contact), measured max
    obs error 6e-6, reward 1.2e-5: tolerances 1e-4 and 1e-3; (b) the cube resting in the still
    hand (contacts, zero actions, 60 steps) from a state settled by the C engine: measured max
    obs error 0.044 (dof and fingertip forces), reward 1.3e-3: tolerances 0.15 and 1e-2.
    """
    c, x = shared_env("ShadowHand", "mujoco"), shared_env("ShadowHand", "mjx")
    restart_env(c)
    qpos, qvel = c.backend.physics_state()
    qpos = qpos.astype(np.float32).astype(np.float64)
    qpos[:, 24:31] = [0.12, -0.39, 0.36, 1, 0, 0, 0]  # beside the hand, thrown up and spinning
    qvel = np.zeros_like(qvel)
    qvel[:, 26:30] = [2.8, 1.0, -2.0, 0.5]
    actions = np.random.default_rng(1).normal(0.0, 0.5, (30, 4, 20)).astype(np.float32)
    obs_c, rew_c, _ = rollout(c, actions, (qpos, qvel))
    obs_x, rew_x, _ = rollout(x, actions, (qpos, qvel))
    assert obs_c[:, :, 74].max() > 0.7 and np.abs(obs_c[-1, :, :24] - obs_c[0, :, :24]).max() > 0.1
    assert np.abs(obs_c - obs_x).max() < 1e-4
    np.testing.assert_allclose(rew_c, rew_x, atol=1e-3)

    restart_env(c)
    for _ in range(80):
        step_env(c, np.zeros((4, 20), np.float32))
    qpos, qvel = c.backend.physics_state()
    rest = (qpos.astype(np.float32).astype(np.float64), np.zeros_like(qvel))
    actions = np.zeros((60, 4, 20), np.float32)
    obs_c, rew_c, _ = rollout(c, actions, rest)
    obs_x, rew_x, _ = rollout(x, actions, rest)
    assert np.abs(obs_c[:, :, 161:191]).max() > 0.05  # the fingertips carry the cube
    assert np.abs(obs_c - obs_x).max() < 0.15
    np.testing.assert_allclose(rew_c, rew_x, atol=1e-2)


def test_ppo_learns(compose_cfg, tmp_path):
    """PPO with the upstream ShadowHandPPO settings but 512 envs (minibatch 4096, one per
    epoch), a [64, 64] MLP, 60-step episodes and 40 epochs: 512 x 8 x 40 = 163,840 env steps.

    Measured wall time ~30 s with the machine otherwise idle (2 cores), several times that when
    it is shared. Early episodes lose the cube to the flailing fingers (mean return about -15);
    by the last epochs it stays near the goal position (seeds 42, 1, 7: +27, +11, +21).
    """
    cfg = compose_cfg(
        "task=ShadowHand",
        "num_envs=512",
        "train.params.config.minibatch_size=4096",
        "train.params.network.mlp.units=[64,64]",
        "task.env.episodeLength=60",
        "max_iterations=40",
        "seed=42",
        f"train_dir={tmp_path}",
    )
    result = run(cfg, plan_run(cfg))
    rewards = [r for _, _, r in result.history]
    assert len(rewards) >= 30 and all(math.isfinite(r) for r in rewards)
    early, late = np.mean(rewards[:5]), np.mean(rewards[-5:])
    assert late > early + 8.0, f"reward did not rise: {rewards}"
    assert result.frames == 40 * 8 * 512
