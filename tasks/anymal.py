"""Anymal: a quadruped tracks random planar velocity commands (IsaacGymEnvs' Anymal rules).

Dofs and actions follow Isaac Gym's order for ANYmal C: legs LF, LH, RF, RH, each HAA, HFE, KFE.
lin, ang: env.learn's linearVelocityScale, angularVelocityScale; q: the base quaternion.

obs (48) = [base linear velocity in the base frame * lin (3), base angular velocity in the base
frame * ang (3), projected gravity (3), commands (vx, vy, yaw rate) * (lin, lin, ang) (3),
(dof positions - default angles) * dofPositionScale (12), dof velocities * dofVelocityScale
(12), actions (12)].
Projected gravity is (0, 0, -1) rotated by q, not by its inverse: upstream's formula (the
physical base-frame gravity has opposite x and y signs), kept so that observations match.

Control: target = actionScale * action + defaultJointAngles (``action_scale``/``action_offset``)
through MuJoCo ``position`` actuators, kp = stiffness, kv = damping, clamped at the URDF's 80 N m
effort, as Isaac Gym's position drives. The torque penalty evaluates that drive law in JAX on
the step's final state, tau = clip(kp (target - q) - kd qdot, +-80); upstream reads PhysX's
dof forces of the last substep. The JAX law is exact for any state and costs 12 multiply-adds;
actuator-force sensors would lag a substep and read zero in a fresh episode.

Reward, with dt = sim.dt * controlFrequencyInv and env.learn's scales multiplied by dt:
  exp(-|cmd_xy - v_xy|^2 / 0.25) * linearVelocityXYRewardScale
  + exp(-(cmd_yaw - w_z)^2 / 0.25) * angularVelocityZRewardScale
  + sum(tau^2) * torqueRewardScale, clipped below at 0.
Termination: a base or thigh ("knee") contact force above 1 N. Timeout after episodeLength_s /
dt steps (2500).
Reset: base at baseInitState, dof positions default * U(0.5, 1.5), dof velocities
U(-0.1, 0.1), commands U(randomCommandVelocityRanges) per component, kept in the carry.

Deviations from upstream:
- Contacts are read from touch sensors on sites wrapping the colliding geoms of the base and
  each thigh: the total normal force per body, where upstream takes the norm of the net contact
  force. Sensors are evaluated at the start of the last physics substep, so a contact made
  during that substep ends the episode one step later.
- The model (tasks/assets/anymal.xml) collides through a base box, thigh capsules and foot
  spheres only; friction uses impratio 10, as MuJoCo's soft friction otherwise lets loaded feet
  creep apart until the robot sinks into a split within seconds.
- Episodes time out as upstream's do, after episodeLength_s / dt - 1 steps
  (``TaskLogic.timeout_steps``).
- The task seam hands ``reset_carry`` no PRNG key: commands are drawn from a key built from
  the bit patterns of two freshly sampled dof velocities (uniform draws themselves), a fresh,
  independent-looking stream per episode.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from . import rotations
from .base import PhysicsFrame, TaskConfigError, TaskLogic

LEGS = ("LF", "LH", "RF", "RH")
DOF_NAMES = tuple(f"{leg}_{joint}" for leg in LEGS for joint in ("HAA", "HFE", "KFE"))
EFFORT_LIMIT = 80.0  # N m, every drive of the ANYmal C URDF
CONTACT_FORCE_LIMIT = 1.0  # N, base or knee contact above this ends the episode
TRACKING_SIGMA = 0.25  # (m/s)^2 and (rad/s)^2 in the exponential tracking terms
TOUCH_PAD = 0.01  # m, touch sites are the colliding geoms grown by this much
TOUCH_BODIES = ("base", *(f"{leg}_THIGH" for leg in LEGS))
IMPRATIO = 10.0  # friction-to-normal impedance ratio of the contacts


class AnymalCarry(NamedTuple):
    commands: jax.Array  # (N, 3) commanded vx, vy (m/s, base frame) and yaw rate (rad/s)
    torque_sq: jax.Array  # (N,) sum of squared drive torques at the current state
    contact: jax.Array  # (N,) bool, base or knee contact force above CONTACT_FORCE_LIMIT


def _static_subtree(body: mujoco.MjsBody) -> list[mujoco.MjsBody]:
    """``body`` and the joint-less descendants that compile fuses into it (URDF links)."""
    out = [body]
    for child in body.bodies:
        if not child.joints:
            out += _static_subtree(child)
    return out


def _legs_in_dof_order(spec: mujoco.MjSpec, base: mujoco.MjsBody) -> None:
    """Re-attach the base's leg subtrees in Isaac Gym's dof order (a URDF lists LF, RF, LH, RH)."""

    def rank(child):
        names = [j.name for j in child.find_all(mujoco.mjtObj.mjOBJ_JOINT)]
        return min((DOF_NAMES.index(n) for n in names if n in DOF_NAMES), default=len(DOF_NAMES))

    children = list(base.bodies)
    ordered = sorted(children, key=rank)
    if [c.name for c in ordered] == [c.name for c in children]:
        return
    source = spec.copy()
    names = [c.name for c in ordered]
    for child in children:
        spec.delete(child)
    for name in names:
        moved = base.add_frame().attach_body(source.body(name), "moved:", "")
        for kind in (mujoco.mjtObj.mjOBJ_BODY, mujoco.mjtObj.mjOBJ_JOINT, mujoco.mjtObj.mjOBJ_GEOM):
            for element in [moved, *moved.find_all(kind)]:
                if element.name.startswith("moved:"):
                    element.name = element.name.removeprefix("moved:")


def _add_touch_sites(spec: mujoco.MjSpec, body: mujoco.MjsBody) -> None:
    """A touch sensor per colliding geom of ``body`` (and its fused links), on a padded copy."""
    geoms = [g for b in _static_subtree(body) for g in b.geoms if g.contype or g.conaffinity]
    for k, geom in enumerate(geoms):
        if geom.type not in (
            mujoco.mjtGeom.mjGEOM_SPHERE,
            mujoco.mjtGeom.mjGEOM_CAPSULE,
            mujoco.mjtGeom.mjGEOM_BOX,
            mujoco.mjtGeom.mjGEOM_ELLIPSOID,
        ):
            raise ValueError(
                f"Anymal: body {body.name!r} collides through a {geom.type.name} geom; touch "
                "sensing supports sphere, capsule, cylinder, box and ellipsoid collision shapes"
            )
        size = np.array(geom.size, dtype=np.float64)
        grow = 3 if geom.type in (mujoco.mjtGeom.mjGEOM_BOX, mujoco.mjtGeom.mjGEOM_ELLIPSOID) else 1
        size[:grow] += TOUCH_PAD
        site = geom.parent.add_site(
            name=f"{body.name}_touch{k}",
            type=geom.type,
            pos=geom.pos,
            quat=geom.quat,
            size=size,
            fromto=geom.fromto,
        )
        site.alt = geom.alt
        spec.add_sensor(
            name=site.name,
            type=mujoco.mjtSensor.mjSENS_TOUCH,
            objtype=mujoco.mjtObj.mjOBJ_SITE,
            objname=site.name,
        )


class Anymal(TaskLogic):
    name = "Anymal"
    num_obs = 48
    num_actions = 12
    asset_file = "anymal.xml"
    actors = {"anymal": ("base",)}  # upstream's actor names
    default_episode_length = 2500

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        learn, control = env_cfg["learn"], env_cfg["control"]
        self.dt = sim_dt * int(env_cfg.get("controlFrequencyInv", 1))
        self.max_episode_length = int(float(learn["episodeLength_s"]) / self.dt + 0.5)
        self.lin_vel_scale = float(learn["linearVelocityScale"])
        self.ang_vel_scale = float(learn["angularVelocityScale"])
        self.dof_pos_scale = float(learn["dofPositionScale"])
        self.dof_vel_scale = float(learn["dofVelocityScale"])
        self.rew_lin_vel_xy = float(learn["linearVelocityXYRewardScale"]) * self.dt
        self.rew_ang_vel_z = float(learn["angularVelocityZRewardScale"]) * self.dt
        self.rew_torque = float(learn["torqueRewardScale"]) * self.dt
        self.act_scale = float(control["actionScale"])
        self.kp, self.kd = float(control["stiffness"]), float(control["damping"])
        angles = env_cfg["defaultJointAngles"]
        self.default_dof_pos = np.array([angles[n] for n in DOF_NAMES], dtype=np.float64)
        ranges = env_cfg["randomCommandVelocityRanges"]
        bounds = np.array([ranges["linear_x"], ranges["linear_y"], ranges["yaw"]], np.float64)
        self.command_low, self.command_high = bounds[:, 0], bounds[:, 1]

        init = env_cfg["baseInitState"]
        x, y, z, w = init["rot"]  # Isaac Gym quaternion order
        quat = np.array([w, x, y, z], dtype=np.float64) / np.linalg.norm([w, x, y, z])
        # MuJoCo's free joint takes its angular velocity in the base frame
        ang_vel = np.asarray(rotations.rotate_inverse(quat, np.asarray(init["vAngular"], float)))
        self.root_qpos = np.concatenate([init["pos"], quat])
        self.root_qvel = np.concatenate([init["vLinear"], ang_vel])

        # (nsensordata, 5): touch columns -> total normal force on base and each thigh
        groups = np.zeros((info.nsensordata, len(TOUCH_BODIES)), np.float32)
        for name, cols in info.sensors.items():
            for b, body in enumerate(TOUCH_BODIES):
                if name.startswith(f"{body}_touch"):
                    groups[cols, b] = 1.0
        self.touch_groups = groups

    @classmethod
    def check_config(cls, env_cfg):
        angles = env_cfg.get("defaultJointAngles") or {}
        missing = [n for n in DOF_NAMES if n not in angles]
        if missing:
            raise TaskConfigError("defaultJointAngles", angles, f"no angle for joints {missing}")
        if (env_cfg.get("urdfAsset") or {}).get("fixBaseLink"):
            raise TaskConfigError("urdfAsset.fixBaseLink", True, "the base must float (False)")
        for axis, (low, high) in env_cfg["randomCommandVelocityRanges"].items():
            if low > high:
                raise TaskConfigError(
                    f"randomCommandVelocityRanges.{axis}", [low, high], "needs min <= max"
                )

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        base = spec.body("base")
        if base is None:
            raise ValueError("Anymal: the asset needs a body named 'base' (the floating base)")
        if not any(j.type == mujoco.mjtJoint.mjJNT_FREE for j in base.joints):
            base.add_freejoint(name="root")  # a URDF root is welded to the world
        _legs_in_dof_order(spec, base)
        joints = base.find_all(mujoco.mjtObj.mjOBJ_JOINT)
        hinges = [j.name for j in joints if j.type != mujoco.mjtJoint.mjJNT_FREE]
        if tuple(hinges) != DOF_NAMES:
            raise ValueError(f"Anymal: expected the joints {list(DOF_NAMES)}, found {hinges}")

        # The robot touches the floor only; cylinders become capsules, as Isaac Gym loads them.
        for geom in spec.geoms:
            if geom.parent.name == "world" or not (geom.contype or geom.conaffinity):
                continue
            if geom.type == mujoco.mjtGeom.mjGEOM_CYLINDER:
                geom.type = mujoco.mjtGeom.mjGEOM_CAPSULE
            geom.contype, geom.conaffinity = 0, 1
        floors = [g for g in spec.worldbody.geoms if g.type == mujoco.mjtGeom.mjGEOM_PLANE]
        if not floors:
            floors = [spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE)]
            floors[0].size = [0.0, 0.0, 1.0]
        for floor in floors:
            floor.contype, floor.conaffinity = 1, 1
            floor.friction[0] = float(env_cfg["plane"]["staticFriction"])

        # Position drives on the 12 joints, gains from the config.
        control = env_cfg["control"]
        by_joint = {a.target: a for a in spec.actuators}
        for name in DOF_NAMES:
            act = by_joint.get(name) or spec.add_actuator(
                name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT
            )
            act.set_to_position(kp=float(control["stiffness"]), kv=float(control["damping"]))
            act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
            act.forcerange = [-EFFORT_LIMIT, EFFORT_LIMIT]
        # MuJoCo's soft friction lets loaded feet creep outwards (the robot sinks into a split
        # within seconds at impratio 1); a 10x stiffer friction holds them, like PhysX's.
        spec.option.impratio = IMPRATIO

        for name in TOUCH_BODIES:
            _add_touch_sites(spec, spec.body(name))

    def action_scale(self):
        return np.full(self.num_actions, self.act_scale)

    def action_offset(self):
        return self.default_dof_pos.copy()

    def initial_carry(self, num_envs):
        return AnymalCarry(
            commands=jnp.zeros((num_envs, 3), jnp.float32),
            torque_sq=jnp.zeros((num_envs,), jnp.float32),
            contact=jnp.zeros((num_envs,), bool),
        )

    def sample_reset(self, key, num_envs):
        kp, kv = jax.random.split(key)
        default = jnp.asarray(self.default_dof_pos, jnp.float32)
        dof_pos = default * jax.random.uniform(kp, (num_envs, 12), minval=0.5, maxval=1.5)
        dof_vel = jax.random.uniform(kv, (num_envs, 12), minval=-0.1, maxval=0.1)
        root_q = jnp.broadcast_to(jnp.asarray(self.root_qpos, jnp.float32), (num_envs, 7))
        root_v = jnp.broadcast_to(jnp.asarray(self.root_qvel, jnp.float32), (num_envs, 6))
        qpos = jnp.concatenate([root_q, dof_pos], axis=-1)
        qvel = jnp.concatenate([root_v, dof_vel], axis=-1)
        return qpos, qvel

    def reset_carry(self, carry, frame, key):
        n = frame.qpos.shape[0]
        u = jax.random.uniform(key, (n, 3))
        low = jnp.asarray(self.command_low, jnp.float32)
        high = jnp.asarray(self.command_high, jnp.float32)
        return AnymalCarry(
            commands=low + u * (high - low),
            torque_sq=jnp.zeros((n,), jnp.float32),
            contact=jnp.zeros((n,), bool),
        )

    def observe(self, frame: PhysicsFrame, actions, carry):
        q, v = frame.qpos, frame.qvel
        quat = q[:, 3:7]
        lin_vel = rotations.rotate_inverse(quat, v[:, 0:3])
        ang_vel = v[:, 3:6]  # MuJoCo's free-joint angular velocity is already base-frame
        gravity = rotations.rotate(quat, jnp.array([0.0, 0.0, -1.0]))  # upstream's formula
        dof_pos, dof_vel = q[:, 7:], v[:, 6:]
        default = jnp.asarray(self.default_dof_pos, jnp.float32)
        ls, als = self.lin_vel_scale, self.ang_vel_scale
        obs = jnp.concatenate(
            [
                lin_vel * ls,
                ang_vel * als,
                gravity,
                carry.commands * jnp.array([ls, ls, als]),
                (dof_pos - default) * self.dof_pos_scale,
                dof_vel * self.dof_vel_scale,
                actions,
            ],
            axis=-1,
        )
        target = actions * self.act_scale + default
        torque = self.kp * (target - dof_pos) - self.kd * dof_vel
        torque = jnp.clip(torque, -EFFORT_LIMIT, EFFORT_LIMIT)
        body_force = frame.sensordata @ jnp.asarray(self.touch_groups)
        contact = jnp.any(body_force > CONTACT_FORCE_LIMIT, axis=-1)
        return obs, carry._replace(torque_sq=jnp.sum(torque**2, axis=-1), contact=contact)

    def reward_and_termination(self, obs, actions, carry):
        lin_vel_xy = obs[:, 0:2] / self.lin_vel_scale
        yaw_rate = obs[:, 5] / self.ang_vel_scale
        lin_err = jnp.sum((carry.commands[:, 0:2] - lin_vel_xy) ** 2, axis=-1)
        ang_err = (carry.commands[:, 2] - yaw_rate) ** 2
        reward = (
            jnp.exp(-lin_err / TRACKING_SIGMA) * self.rew_lin_vel_xy
            + jnp.exp(-ang_err / TRACKING_SIGMA) * self.rew_ang_vel_z
            + carry.torque_sq * self.rew_torque
        )
        return jnp.maximum(reward, 0.0), carry.contact
