"""FrankaCabinet: a Franka arm opens a cabinet's top drawer (IsaacGymEnvs' FrankaCabinet rules).

obs (23) = [Franka dof positions scaled to [-1, 1] by their limits (9), dof velocities *
dofVelocityScale (9), drawer grasp point - Franka grasp point (3), drawer opening (1), drawer
velocity (1)]; dofs panda_joint1..7, panda_finger_joint1..2.

Actions (9) move position targets: target += actionScale * speed * action / 60 per step (speed 1
for the arm, 0.1 for the fingers), clamped to the joint limits and tracked by drives (stiffness
400, damping 80, effort 87 / 12 on the arm; damping 100, effort 200 on the fingers). They are
MuJoCo ``intvelocity`` actuators: the activation is the target, ``ctrl`` its rate.

Grasp frames, from qpos through sites: the Franka grasp point is fixed to panda_link7 at the
fingers' midpoint (fingers at 0) + 0.04 along link7's y, turned like the fingers; gripper forward
= its z, up = its y. The drawer grasp point g is (0.3, 0.01, 0) in drawer_top's frame; inward =
-x, up = z.

Reward (d = grasp point distance, o = drawer opening, a = actions, "around" = left finger above g
and right finger below it, h = 0.5 if around else 0):
  distRewardScale * (1 / (1 + d^2))^2, doubled when d <= 0.02
  + rotRewardScale * 0.5 * (sign(f) f^2 + sign(u) u^2), f = forward . inward, u = up . up
  + aroundHandleRewardScale * h + openRewardScale * (o h + o)
  + fingerDistRewardScale * ((0.04 - |z_left - z_g|) + (0.04 - |z_right - z_g|)) if around
  - actionPenaltyScale * sum(a^2)
  + 0.5 if o > 0.01, + h if o > 0.2, + 2 h if o > 0.39;
  -1 instead of all that when a finger is more than 0.04 behind g along x.
Termination: o > 0.39. Timeout: upstream flags it at progress >= episodeLength - 1, so episodes
last episodeLength - 1 = 499 steps. Reset: Franka dofs at upstream's default pose + U(-0.125,
0.125), clamped to the limits, at rest, targets there; drawer closed and at rest.

Deviations from upstream:
- No props (numProps is ignored): loose boxes in the drawer do not enter the rules and would
  multiply the contacts. Doors and the lower drawer are fixed; only the hand and the fingers
  collide, and only with the drawer front and handle.
- Finger stiffness 5000, not 1e6: PhysX integrates drives implicitly, MuJoCo's position term is
  explicit and stable at a 1/60 s step only while dt^2 kp < 4 m + 2 dt kd; at 5000 a finger still
  reaches its target within about one step.
- Drive damping is joint damping (integrated implicitly); the effort limit clamps the stiffness
  term only. MJX has no early activation, so a drive pulls towards the target as it stood before
  the step's update (1/60 s behind upstream; the arm's time constant is 0.2 s). With
  controlFrequencyInv > 1 the target ramps over the physics steps instead of jumping.
- Envs reset as their episode ends; upstream resets them one step later.
- startPositionNoise and startRotationNoise must be 0 (upstream's default): the cabinet is part
  of the compiled model.

``assets_root``: upstream loads two files (assetFileNameFranka, assetFileNameCabinet); here one
file, ``env.asset.assetFileName`` (the config points it at the Franka file), must hold the arm
and the cabinet with upstream's joint and link names, else loading fails naming both keys.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from . import components as C
from .base import PhysicsFrame, TaskConfigError, TaskLogic
from .indexing import columns

ARM_JOINTS = tuple(f"panda_joint{i}" for i in range(1, 8))
FINGER_JOINTS = ("panda_finger_joint1", "panda_finger_joint2")
DRAWER_JOINT = "drawer_top_joint"
# bodies moved by the 9 Franka dofs (dof order) and by the drawer dof
DOF_BODIES = (*(f"panda_link{i}" for i in range(1, 8)), "panda_leftfinger", "panda_rightfinger")
DRAWER_BODY = "drawer_top"
HAND_BODY = "panda_link7"
GRIP_BODIES = ("panda_hand", "panda_leftfinger", "panda_rightfinger")
SITES = ("franka_grasp", "left_finger", "right_finger", "drawer_grasp")

DEFAULT_DOF_POS = (1.157, -1.066, -0.155, -2.239, -1.841, 1.003, 0.469, 0.035, 0.035)
STIFFNESS = (400.0,) * 7 + (5000.0,) * 2
DAMPING = (80.0,) * 7 + (100.0,) * 2
EFFORT = (87.0,) * 4 + (12.0,) * 3 + (200.0,) * 2
SPEED = (1.0,) * 7 + (0.1,) * 2
TARGET_DT = 1.0 / 60.0  # upstream integrates targets with a fixed 1/60 s
GRASP_OFFSET_Y = 0.04  # Franka grasp point: + this along panda_link7's y
DRAWER_GRASP = (0.3, 0.01, 0.0)  # in drawer_top's frame
FINGER_BEHIND = 0.04  # a finger this far behind the drawer grasp point (-x) is "bad style"


class GraspCarry(NamedTuple):
    """Grasp geometry of the observed frame, for the reward: component tuples
    (:mod:`.components`) of (N,) arrays, or floats where the model fixes the value."""

    dots: tuple[C.Component, C.Component]  # gripper forward . drawer inward, up . drawer up
    left: C.Vec  # left finger position
    right: C.Vec  # right finger position
    handle: C.Vec  # drawer grasp point


def _hand_grasp_pose(spec: mujoco.MjSpec) -> tuple[np.ndarray, np.ndarray]:
    """Franka grasp frame in panda_link7's frame: fingers' midpoint (both at 0, where Isaac Gym
    creates them) + 0.04 along y, oriented like the left finger; position (3,), quat (4,)."""
    model = spec.copy().compile()
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)

    def frame(name):
        i = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
        return data.xpos[i].copy(), data.xquat[i].copy()

    hand_pos, hand_quat = frame(HAND_BODY)
    left_pos, left_quat = frame("panda_leftfinger")
    right_pos, _ = frame("panda_rightfinger")
    inv = np.empty(4)
    mujoco.mju_negQuat(inv, hand_quat)
    pos, quat = np.empty(3), np.empty(4)
    mujoco.mju_rotVecQuat(pos, 0.5 * (left_pos + right_pos) - hand_pos, inv)
    mujoco.mju_mulQuat(quat, inv, left_quat)
    return pos + [0.0, GRASP_OFFSET_Y, 0.0], quat


def _set_collisions(spec: mujoco.MjSpec) -> None:
    """Hand and fingers (contype 1) touch the drawer and its handle (conaffinity 1), nothing
    else touches anything; shapes the file marks as non-colliding stay so."""
    grip = set(GRIP_BODIES)
    drawer = {DRAWER_BODY} | {
        b.name for b in spec.body(DRAWER_BODY).find_all(mujoco.mjtObj.mjOBJ_BODY)
    }
    for geom in spec.geoms:
        collides = bool(geom.contype or geom.conaffinity)
        body = geom.parent.name
        geom.contype = int(collides and body in grip)
        geom.conaffinity = int(collides and body in drawer)


class FrankaCabinet(TaskLogic):
    name = "FrankaCabinet"
    num_obs = 23
    num_actions = 9
    asset_file = "franka_cabinet.xml"
    actors = {"franka": ("panda_link0",), "cabinet": ("sektion",)}  # upstream's actor names
    default_episode_length = 500
    keeps_carry = False  # observe hands the grasp geometry to the reward, nothing more

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        c = env_cfg
        self.action_scale_cfg = float(c["actionScale"])
        self.control_freq_inv = int(c.get("controlFrequencyInv", 1))
        self.dof_vel_scale = float(c["dofVelocityScale"])
        self.dist_scale = float(c["distRewardScale"])
        self.rot_scale = float(c["rotRewardScale"])
        self.around_scale = float(c["aroundHandleRewardScale"])
        self.open_scale = float(c["openRewardScale"])
        self.finger_scale = float(c["fingerDistRewardScale"])
        self.action_penalty_scale = float(c["actionPenaltyScale"])
        tree = info.tree
        joints = [tree.body_joints[tree.bodies[b]][0] for b in (*DOF_BODIES, DRAWER_BODY)]
        self.dof_qpos = columns(tree.jnt_qposadr[joints[:9]])
        self.dof_qvel = columns(tree.jnt_dofadr[joints[:9]])
        self.drawer_qpos = int(tree.jnt_qposadr[joints[9]])
        self.drawer_qvel = int(tree.jnt_dofadr[joints[9]])
        lower, upper = info.joint_range[joints[:9], 0], info.joint_range[joints[:9], 1]
        self.dof_lower = jnp.asarray(lower, jnp.float32)
        self.dof_upper = jnp.asarray(upper, jnp.float32)
        self.default_dof_pos = jnp.asarray(DEFAULT_DOF_POS, jnp.float32)
        self.qpos0 = jnp.asarray(info.qpos0, jnp.float32)

    @classmethod
    def check_config(cls, env_cfg):
        for key in ("startPositionNoise", "startRotationNoise"):
            if float(env_cfg.get(key, 0.0)) != 0.0:
                raise TaskConfigError(
                    key, env_cfg[key], "only 0 is supported (the cabinet is fixed in the model)"
                )

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        joints = {j.name for j in spec.joints}
        missing = [j for j in (*ARM_JOINTS, *FINGER_JOINTS, DRAWER_JOINT) if j not in joints]
        if missing:
            raise ValueError(
                f"FrankaCabinet: the model lacks joints {missing}. Under assets_root the task "
                "loads one file, task.env.asset.assetFileName (by default assetFileNameFranka), "
                "and it must hold both the Franka and the cabinet with upstream's joint names; "
                "the second upstream file, task.env.asset.assetFileNameCabinet, is not attached"
            )
        # Upstream sets the drives in code whatever the asset says: replace any actuator.
        for actuator in list(spec.actuators):
            spec.delete(actuator)
        for name, kp, kd, effort in zip(
            (*ARM_JOINTS, *FINGER_JOINTS), STIFFNESS, DAMPING, EFFORT, strict=True
        ):
            spec.joint(name).damping = [kd, 0.0, 0.0]
            drive = spec.add_actuator(
                name=f"{name}_drive", target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT
            )
            drive.set_to_intvelocity(kp=kp, inheritrange=1.0)  # targets within the joint limits
            drive.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            drive.forcerange = [-effort, effort]
        drawer = spec.joint(DRAWER_JOINT)
        drawer.damping, drawer.armature = [10.0, 0.0, 0.0], 0.005
        # Upstream switches gravity off for the Franka.
        base = spec.body(DOF_BODIES[0]).parent
        for body in [base, *base.find_all(mujoco.mjtObj.mjOBJ_BODY)]:
            body.gravcomp = 1.0
        _set_collisions(spec)
        pos, quat = _hand_grasp_pose(spec)
        spec.body(HAND_BODY).add_site(name=SITES[0], pos=pos, quat=quat)
        spec.body("panda_leftfinger").add_site(name=SITES[1])
        spec.body("panda_rightfinger").add_site(name=SITES[2])
        spec.body(DRAWER_BODY).add_site(name=SITES[3], pos=DRAWER_GRASP)

    def action_scale(self):
        # per env step the target moves by ctrl * (controlFrequencyInv * dt): match upstream's
        # actionScale * speed * action / 60
        step = self.control_freq_inv * self.sim_dt
        return np.asarray(SPEED) * self.action_scale_cfg * TARGET_DT / step

    def initial_carry(self, num_envs):
        return ()

    def sample_reset(self, key, num_envs):
        noise = 0.25 * (jax.random.uniform(key, (num_envs, 9)) - 0.5)
        dof = jnp.clip(self.default_dof_pos + noise, self.dof_lower, self.dof_upper)
        qpos = jnp.broadcast_to(self.qpos0, (num_envs, self.info.nq))
        qpos = qpos.at[:, self.dof_qpos].set(dof).at[:, self.drawer_qpos].set(0.0)
        return qpos, jnp.zeros((num_envs, self.info.nv))

    def reset_carry(self, carry, frame, key):
        return ()  # observe computes the grasp geometry from the frame

    def observe(self, frame: PhysicsFrame, actions, carry):
        q, v = frame.qpos, frame.qvel
        (grasp, hand_q), (left, _), (right, _), (handle, drawer_q) = self.info.tree.site_frames(
            q, SITES
        )
        dof_scaled = (
            2.0 * (q[:, self.dof_qpos] - self.dof_lower) / (self.dof_upper - self.dof_lower) - 1.0
        )
        to_handle = [h - g for h, g in zip(handle, grasp, strict=True)]
        obs = jnp.concatenate(
            [
                dof_scaled,
                v[:, self.dof_qvel] * self.dof_vel_scale,
                jnp.stack(to_handle, axis=-1),
                q[:, self.drawer_qpos, None],
                v[:, self.drawer_qvel, None],
            ],
            axis=-1,
        )
        forward, up = C.rotate(hand_q, (0.0, 0.0, 1.0)), C.rotate(hand_q, (0.0, 1.0, 0.0))
        inward = C.rotate(drawer_q, (-1.0, 0.0, 0.0))
        drawer_up = C.rotate(drawer_q, (0.0, 0.0, 1.0))
        dots = (C.dot(forward, inward), C.dot(up, drawer_up))
        return obs, GraspCarry(dots, left, right, handle)

    def reward_and_termination(self, obs, actions, carry):
        # sums of columns, not reductions over small axes: XLA's CPU reductions cost more
        to_handle = tuple(obs[:, k] for k in range(18, 21))
        d = jnp.sqrt(C.dot(to_handle, to_handle))
        opening = obs[:, 21]
        dist = (1.0 / (1.0 + d**2)) ** 2
        dist = jnp.where(d <= 0.02, 2.0 * dist, dist)
        f, u = carry.dots
        rot = 0.5 * (jnp.sign(f) * f**2 + jnp.sign(u) * u**2)
        left, right, handle = carry.left, carry.right, carry.handle
        around = (left[2] > handle[2]) & (right[2] < handle[2])
        h = jnp.where(around, 0.5, 0.0)
        finger_gap = (0.04 - jnp.abs(left[2] - handle[2])) + (0.04 - jnp.abs(right[2] - handle[2]))
        finger = jnp.where(around, finger_gap, 0.0)
        a = tuple(actions[:, k] for k in range(actions.shape[1]))
        reward = (
            self.dist_scale * dist
            + self.rot_scale * rot
            + self.around_scale * h
            + self.open_scale * (opening * h + opening)
            + self.finger_scale * finger
            - self.action_penalty_scale * C.dot(a, a)
        )
        reward = reward + jnp.where(opening > 0.01, 0.5, 0.0)
        reward = reward + jnp.where(opening > 0.2, h, 0.0) + jnp.where(opening > 0.39, 2.0 * h, 0.0)
        behind = handle[0] - FINGER_BEHIND
        bad = (left[0] < behind) | (right[0] < behind)
        reward = jnp.where(bad, -1.0, reward)
        return reward.astype(jnp.float32), opening > 0.39
