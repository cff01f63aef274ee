"""ShadowHand: turn a cube in a Shadow Hand to random target orientations (IsaacGymEnvs' rules).

The hand (24 joints, 20 position servos; tasks/assets/shadow_hand.xml) is fixed palm up; the cube
starts 10 cm above it. Quaternions are published in Isaac Gym's (x, y, z, w) order, so every slot
holds what upstream's does. Observation layouts by ``observationType`` (default ``full_state``):

* full_state (211): dof positions unscaled to [-1, 1] by the joint limits (24) | dof velocities
  * 0.2 (24) | joint actuator forces * 10 (24) | object position (3), orientation (4) | object
  linear velocity (3) | object angular velocity * 0.2 (3, world frame) | goal position (3),
  orientation (4) | object-to-goal rotation q_obj * conj(q_goal) (4) | per fingertip (ff, mf, rf,
  lf, th distal bodies: their frame origins) position, orientation, linear and angular velocity
  (5 x 13) | per fingertip force then torque at that origin, in its frame, * 10 (5 x 6) | actions
  (20).
* full (157): the same without the actuator forces and the fingertip force-torques.
* full_no_vel (77): dof positions (24) | object pose (7) | goal pose (7) | object-to-goal
  rotation (4) | fingertip positions (15) | actions (20).
* openai (42): fingertip positions (15) | object position (3) | object-to-goal rotation (4) |
  actions (20).

Reward = distRewardScale * |object - goal position| + rotRewardScale / (rot_dist + rotEps)
+ actionPenaltyScale * sum(a^2), rot_dist = 2 asin(min(|xyz of q_obj * conj(q_goal)|, 1));
+ reachGoalBonus when rot_dist <= successTolerance (the goal is then resampled before the next
observation); + fallPenalty, and a reset, when the position error reaches fallDistance. With
maxConsecutiveSuccesses > 0 a success restarts the step count, the episode ends after that many
successes, and one that runs out of steps gets 0.5 * fallPenalty.

Actions are absolute joint targets: target = lower + (a + 1) / 2 * (upper - lower), dof order.
Resets as upstream: object at its start position + resetPositionNoise * U(-1, 1) per axis,
orientation rot_x(pi u0) * rot_y(pi u1) (resetRotationNoise is read by upstream but not used);
hand dofs resetDofPosRandomInterval * U(lower, upper), velocities resetDofVelRandomInterval *
U(-1, 1); a new goal rot_x(pi u0) * rot_y(pi u1) at position start - (0, 0, 0.04).

Episodes time out after episodeLength - 1 steps, upstream's rule (``TaskLogic.timeout_steps``).
Deviations from upstream: with maxConsecutiveSuccesses > 0 the task counts its own steps (since
the start or the latest success, by the same rule), so a run-out episode ends as a termination,
not a bootstrapped time-out. Fingertip velocities are those
of the distal frames' origins (PhysX reports the centre of mass, <= 1.6 cm away). The goal is no
simulated object: it lives in the task carry, and each fresh episode draws its goals from a PRNG
key of its own, drawn from a stream folded off the key of its reset draw, so runs are
reproducible per seed and identical on both backends. For cheap physics the model (see
its header) has no hand self-collision, floor or joint friction. Not supported, with an error
naming the key: relative control, actionsMovingAverage != 1, random object forces, asymmetric
observations, objects other than the block. The averaged consecutive-successes statistic is not
reported.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from . import rotations
from .base import PhysicsFrame, TaskConfigError, TaskLogic
from .indexing import columns
from .kinematics import HingeChains

FINGERTIPS = ("robot0:ffdistal", "robot0:mfdistal", "robot0:rfdistal", "robot0:lfdistal")
FINGERTIPS += ("robot0:thdistal",)
COUPLED = FINGERTIPS[:4]  # their J0 joints follow J1 through a tendon and have no motor
OBJECT = "object"  # the cube's body (with a free joint)
OBJECT_START = (0.0, -0.39, 0.6)
GOAL_POS = (0.0, -0.39, 0.56)  # the start position, 4 cm lower
VEL_OBS_SCALE = 0.2
FORCE_TORQUE_OBS_SCALE = 10.0
NUM_DOFS = 24
TIP_ROWS = np.r_[0:3, 4:7, 3, 7:13]  # fingertip state rows: the quaternion's w moved last

# observation layouts: named parts, in order, and the width of every part
WIDTHS = {"dof_pos": 24, "dof_vel": 24, "dof_force": 24, "object_pose": 7, "object_pos": 3}
WIDTHS |= {"object_linvel": 3, "object_angvel": 3, "goal_pose": 7, "quat_diff": 4, "actions": 20}
WIDTHS |= {"fingertip_states": 65, "fingertip_pos": 15, "fingertip_ft": 30}
_OBJECT_STATE = ("object_pose", "object_linvel", "object_angvel", "goal_pose", "quat_diff")
LAYOUTS = {
    "openai": ("fingertip_pos", "object_pos", "quat_diff", "actions"),
    "full_no_vel": ("dof_pos", "object_pose", "goal_pose", "quat_diff", "fingertip_pos", "actions"),
    "full": ("dof_pos", "dof_vel", *_OBJECT_STATE, "fingertip_states", "actions"),
    "full_state": (
        *("dof_pos", "dof_vel", "dof_force", *_OBJECT_STATE),
        *("fingertip_states", "fingertip_ft", "actions"),
    ),
}


def slot(layout: tuple[str, ...], part: str) -> int:
    """First observation column of ``part`` in ``layout``."""
    return sum(WIDTHS[p] for p in layout[: layout.index(part)])


class HandCarry(NamedTuple):
    goal_quat: jax.Array  # (N, 4) target orientation (w, x, y, z)
    key: jax.Array  # (N, 2) uint32 PRNG key of each env's next goal
    reached: jax.Array  # (N,) bool: the latest observed frame reached the goal
    successes: jax.Array  # (N,) float32 goals reached in this episode
    steps: jax.Array  # (N,) int32 env steps behind the latest frame (-1: none observed yet)


def xyzw(q: jax.Array) -> jax.Array:
    """Quaternions (..., 4) from MuJoCo's (w, x, y, z) to Isaac Gym's (x, y, z, w) order."""
    return jnp.concatenate([q[..., 1:], q[..., :1]], axis=-1)


def random_rotation(u0: jax.Array, u1: jax.Array) -> jax.Array:
    """rot_x(pi u0) * rot_y(pi u1) for u0, u1 (N,) in [-1, 1] -> quaternions (N, 4)."""
    qx = rotations.from_axis_angle(jnp.array([1.0, 0.0, 0.0]), u0 * jnp.pi)
    qy = rotations.from_axis_angle(jnp.array([0.0, 1.0, 0.0]), u1 * jnp.pi)
    return rotations.multiply(qx, qy)


def rotation_distance(quat_diff_xyz: jax.Array) -> jax.Array:
    """Angle (N,) of rotations whose quaternion vector parts are ``quat_diff_xyz`` (N, 3)."""
    return 2.0 * jnp.arcsin(jnp.minimum(jnp.linalg.norm(quat_diff_xyz, axis=-1), 1.0))


def _interleave(states: jax.Array, rows) -> jax.Array:
    """Per-site blocks of ``rows`` of ``states`` (R, C, N), side by side: (N, C * len(rows)).

    Stacking the rows as columns keeps XLA from running the fingertip kinematics in a
    transposed, slower layout (which a plain transpose of the result does)."""
    return jnp.stack([states[r, c] for c in range(states.shape[1]) for r in rows], axis=1)


def _option(env_cfg: dict[str, Any], key: str, default: Any) -> Any:
    value = env_cfg.get(key, default)
    return default if value is None else value


class ShadowHand(TaskLogic):
    name = "ShadowHand"
    num_obs = 211  # full_state; the instance attribute follows observationType
    num_actions = 20
    asset_file = "shadow_hand.xml"
    actors = {"hand": ("robot0:hand mount",), "object": ("object",)}  # upstream's actor names
    default_episode_length = 600

    @classmethod
    def check_config(cls, env_cfg):
        obs_type = _option(env_cfg, "observationType", "full_state")
        if obs_type not in LAYOUTS:
            raise TaskConfigError(
                "observationType", obs_type, "must be one of " + ", ".join(map(repr, LAYOUTS))
            )
        refused = {
            "objectType": ("block", "only 'block' (the cube) is supported"),
            "asymmetric_observations": (False, "not supported: the critic sees the observations"),
            "useRelativeControl": (False, "not supported: actions are absolute joint targets"),
            "actionsMovingAverage": (1.0, "only 1.0 (no smoothing of joint targets) is supported"),
            "forceScale": (0.0, "random forces on the object are not supported; use 0.0"),
        }
        for key, (allowed, why) in refused.items():
            value = _option(env_cfg, key, allowed)
            if value != allowed:
                raise TaskConfigError(key, value, why)

    @classmethod
    def observation_size(cls, env_cfg):
        layout = LAYOUTS[_option(env_cfg, "observationType", "full_state")]
        return sum(WIDTHS[p] for p in layout)

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        self.check_config(env_cfg)
        c = env_cfg
        self.obs_type = _option(c, "observationType", "full_state")
        self.layout = LAYOUTS[self.obs_type]
        self.num_obs = self.observation_size(env_cfg)
        self.dist_reward_scale = float(c["distRewardScale"])
        self.rot_reward_scale = float(c["rotRewardScale"])
        self.rot_eps = float(c["rotEps"])
        self.action_penalty_scale = float(c["actionPenaltyScale"])
        self.success_tolerance = float(c["successTolerance"])
        self.reach_goal_bonus = float(c["reachGoalBonus"])
        self.fall_distance = float(c["fallDistance"])
        self.fall_penalty = float(c["fallPenalty"])
        self.max_successes = int(_option(c, "maxConsecutiveSuccesses", 0))
        self.position_noise = float(c["resetPositionNoise"])
        self.dof_pos_noise = float(c["resetDofPosRandomInterval"])
        self.dof_vel_noise = float(c["resetDofVelRandomInterval"])
        reset_time = float(_option(c, "resetTime", -1.0))
        if reset_time > 0.0:
            control_dt = int(_option(c, "controlFrequencyInv", 1)) * sim_dt
            self.max_episode_length = int(round(reset_time / control_dt))
        # Steps an episode may run (since its start or its latest success).
        self.episode_steps = self.max_episode_length
        if self.max_successes > 0:  # the task ends episodes itself: keep the step limit away
            self.max_episode_length = (self.max_successes + 1) * self.episode_steps
        self._index_model(info)

    def _index_model(self, info) -> None:
        tree = info.tree
        hinge = np.flatnonzero(tree.jnt_type == mujoco.mjtJoint.mjJNT_HINGE)
        free = np.flatnonzero(tree.jnt_type == mujoco.mjtJoint.mjJNT_FREE)
        if hinge.size != NUM_DOFS or free.size != 1 or info.nu != self.num_actions:
            raise ValueError(
                f"ShadowHand needs {NUM_DOFS} hinge joints, one free joint (the cube) and "
                f"{self.num_actions} actuators; the model has {hinge.size}, {free.size}, {info.nu}"
            )
        self.dof_q = columns(tree.jnt_qposadr[hinge])
        self.dof_v = columns(tree.jnt_dofadr[hinge])
        self.obj_q = int(tree.jnt_qposadr[free[0]])
        self.obj_v = int(tree.jnt_dofadr[free[0]])
        self.nq, self.nv = info.nq, info.nv
        self.dof_lower = np.asarray(info.joint_range[hinge, 0], np.float64)
        self.dof_upper = np.asarray(info.joint_range[hinge, 1], np.float64)
        coupled = {j for b in COUPLED for j in tree.body_joints[tree.bodies[b]]}
        self.actuated = np.array([k for k, j in enumerate(hinge) if j not in coupled])
        sensors = [f"dof_force_{k}" for k in range(NUM_DOFS)]
        self.dof_force_cols = columns(np.concatenate([np.r_[info.sensors[s]] for s in sensors]))
        sensors = [f"{b}_{kind}" for b in FINGERTIPS for kind in ("force", "torque")]
        self.ft_cols = columns(np.concatenate([np.r_[info.sensors[s]] for s in sensors]))
        self.fingertips = HingeChains(tree, tuple(f"{b}_frame" for b in FINGERTIPS))

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        cls.check_config(env_cfg)
        names = {b.name for b in spec.bodies}
        missing = [b for b in (*FINGERTIPS, OBJECT) if b not in names]
        if missing:
            name = _option(env_cfg.get("asset", {}), "assetFileName", None)
            raise TaskConfigError(
                "asset.assetFileName",
                name,
                f"the model lacks the bodies {missing}. With assets_root, ShadowHand loads one "
                "MJCF holding the hand (upstream's joint names) and the cube as a free body "
                f"{OBJECT!r}, like tasks/assets/shadow_hand.xml; upstream's hand file (shared.xml "
                "includes, meshes, the cube in assetFileNameBlock) is not supported",
            )
        for body in spec.bodies:  # Isaac Gym loads the hand without gravity
            body.gravcomp = 0.0 if body.name in ("world", OBJECT) else 1.0
        for geom in spec.geoms:  # the hand touches the cube only: no self-collision, no ground
            if geom.contype or geom.conaffinity:
                on_cube = geom.parent.name == OBJECT
                geom.contype, geom.conaffinity = 1, int(on_cube)
        joints = [j for j in _tree_joints(spec.worldbody) if j.type == mujoco.mjtJoint.mjJNT_HINGE]
        for k, joint in enumerate(joints):
            spec.add_sensor(
                name=f"dof_force_{k}",
                type=mujoco.mjtSensor.mjSENS_JOINTACTFRC,
                objtype=mujoco.mjtObj.mjOBJ_JOINT,
                objname=joint.name,
            )
        for body in FINGERTIPS:
            site = spec.body(body).add_site(name=f"{body}_frame")
            for kind, sensor in (("force", "FORCE"), ("torque", "TORQUE")):
                spec.add_sensor(
                    name=f"{body}_{kind}",
                    type=getattr(mujoco.mjtSensor, f"mjSENS_{sensor}"),
                    objtype=mujoco.mjtObj.mjOBJ_SITE,
                    objname=site.name,
                )

    def action_scale(self):
        lo, hi = self.dof_lower[self.actuated], self.dof_upper[self.actuated]
        return 0.5 * (hi - lo)

    def action_offset(self):
        lo, hi = self.dof_lower[self.actuated], self.dof_upper[self.actuated]
        return 0.5 * (hi + lo)

    def initial_carry(self, num_envs):
        return HandCarry(
            goal_quat=jnp.tile(jnp.array([1.0, 0.0, 0.0, 0.0]), (num_envs, 1)),
            key=jnp.zeros((num_envs, 2), jnp.uint32),
            reached=jnp.zeros((num_envs,), bool),
            successes=jnp.zeros((num_envs,), jnp.float32),
            steps=jnp.full((num_envs,), -1, jnp.int32),
        )

    def sample_reset(self, key, num_envs):
        u = jax.random.uniform(key, (num_envs, 5 + 2 * NUM_DOFS), minval=-1.0, maxval=1.0)
        pos = jnp.asarray(OBJECT_START) + self.position_noise * u[:, 0:3]
        quat = random_rotation(u[:, 3], u[:, 4])
        lower, upper = jnp.asarray(self.dof_lower), jnp.asarray(self.dof_upper)
        dof = self.dof_pos_noise * (lower + (upper - lower) * 0.5 * (u[:, 5 : 5 + NUM_DOFS] + 1.0))
        dof_vel = self.dof_vel_noise * u[:, 5 + NUM_DOFS :]
        qpos = jnp.zeros((num_envs, self.nq), jnp.float32).at[:, self.dof_q].set(dof)
        qpos = qpos.at[:, self.obj_q : self.obj_q + 7].set(jnp.concatenate([pos, quat], axis=-1))
        qvel = jnp.zeros((num_envs, self.nv), jnp.float32).at[:, self.dof_v].set(dof_vel)
        return qpos, qvel

    def reset_carry(self, carry, frame, key):
        keys = jax.random.split(key, frame.qpos.shape[0])
        if jax.dtypes.issubdtype(keys.dtype, jax.dtypes.prng_key):
            keys = jax.random.key_data(keys)  # the carry keeps raw (N, 2) uint32 keys
        key, goal = self._next_goal(keys)
        fresh = self.initial_carry(frame.qpos.shape[0])
        return fresh._replace(goal_quat=goal, key=key)

    @staticmethod
    def _next_goal(keys: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(keys after the draw (N, 2), a random goal orientation (N, 4)) from keys (N, 2)."""
        split = jax.vmap(jax.random.split)(keys)
        u = jax.vmap(lambda k: jax.random.uniform(k, (2,), minval=-1.0, maxval=1.0))(split[:, 1])
        return split[:, 0], random_rotation(u[:, 0], u[:, 1])

    def observe(self, frame: PhysicsFrame, actions, carry: HandCarry):
        # a goal reached in the previous frame is replaced before this frame is observed (the
        # draws are skipped in steps where no env reached its goal)
        def redraw(keys, goals):
            new_keys, new_goals = self._next_goal(keys)
            reached = carry.reached[:, None]
            return jnp.where(reached, new_keys, keys), jnp.where(reached, new_goals, goals)

        key, goal = jax.lax.cond(
            carry.reached.any(), redraw, lambda k, g: (k, g), carry.key, carry.goal_quat
        )

        q, v, s = frame.qpos, frame.qvel, frame.sensordata
        obj_pos, obj_quat = q[:, self.obj_q : self.obj_q + 3], q[:, self.obj_q + 3 : self.obj_q + 7]
        quat_diff = rotations.multiply(obj_quat, rotations.conjugate(goal))
        lower, upper = jnp.asarray(self.dof_lower), jnp.asarray(self.dof_upper)
        tips = self.fingertips.states(q, v)  # (13, 5, N)
        n = q.shape[0]
        goal_pos = jnp.broadcast_to(jnp.asarray(GOAL_POS, q.dtype), (n, 3))
        parts = {
            "dof_pos": (2.0 * q[:, self.dof_q] - upper - lower) / (upper - lower),
            "dof_vel": VEL_OBS_SCALE * v[:, self.dof_v],
            "dof_force": FORCE_TORQUE_OBS_SCALE * s[:, self.dof_force_cols],
            "object_pose": jnp.concatenate([obj_pos, xyzw(obj_quat)], axis=-1),
            "object_pos": obj_pos,
            "object_linvel": v[:, self.obj_v : self.obj_v + 3],
            # MuJoCo's free-joint angular velocity is body-local; Isaac Gym's is world-frame
            "object_angvel": VEL_OBS_SCALE
            * rotations.rotate(obj_quat, v[:, self.obj_v + 3 : self.obj_v + 6]),
            "goal_pose": jnp.concatenate([goal_pos, xyzw(goal)], axis=-1),
            "quat_diff": xyzw(quat_diff),
            "fingertip_states": _interleave(tips, TIP_ROWS),
            "fingertip_pos": _interleave(tips, (0, 1, 2)),
            "fingertip_ft": FORCE_TORQUE_OBS_SCALE * s[:, self.ft_cols],
            "actions": actions,
        }
        obs = jnp.concatenate([parts[p] for p in self.layout], axis=-1)

        steps = carry.steps + 1  # 0 for the first frame of an episode: no success counted there
        reached = (rotation_distance(quat_diff[:, 1:]) <= self.success_tolerance) & (steps > 0)
        if self.max_successes > 0:
            steps = jnp.where(reached, 0, steps)
        carry = HandCarry(goal, key, reached, carry.successes + reached, steps)
        return obs, carry

    def reward_and_termination(self, obs, actions, carry: HandCarry):
        pos_at = slot(self.layout, "object_pose" if "object_pose" in self.layout else "object_pos")
        diff_at = slot(self.layout, "quat_diff")
        goal_dist = jnp.linalg.norm(obs[:, pos_at : pos_at + 3] - jnp.asarray(GOAL_POS), axis=-1)
        rot_dist = rotation_distance(obs[:, diff_at : diff_at + 3])  # (x, y, z) of (x, y, z, w)
        reward = (
            self.dist_reward_scale * goal_dist
            + self.rot_reward_scale / (jnp.abs(rot_dist) + self.rot_eps)
            + self.action_penalty_scale * jnp.sum(actions**2, axis=-1)
        )
        reward = reward + jnp.where(carry.reached, self.reach_goal_bonus, 0.0)
        fell = goal_dist >= self.fall_distance
        reward = reward + jnp.where(fell, self.fall_penalty, 0.0)
        done = fell
        if self.max_successes > 0:
            out_of_steps = carry.steps >= max(self.episode_steps - 1, 1)  # the timeout rule
            reward = reward + jnp.where(out_of_steps, 0.5 * self.fall_penalty, 0.0)
            done = done | out_of_steps | (carry.successes >= self.max_successes)
        return reward.astype(jnp.float32), done


def _tree_joints(body):
    """Joints of ``body``'s subtree in MuJoCo's compiled (depth-first) order."""
    yield from body.joints
    for child in body.bodies:
        yield from _tree_joints(child)
