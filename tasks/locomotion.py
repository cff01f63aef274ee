"""What IsaacGymEnvs' locomotion tasks (Ant, Humanoid) share: a free torso runs towards a target.

Both tasks observe the same 12-slot torso head, obs[:, 0:12] = [torso height, local velocity (3),
local angular velocity (3), yaw, roll, angle to target, up projection, heading projection]; both
reward progress (the change of the potential -planar distance to the target / dt), an up bonus
and a heading term, and end an episode with deathCost when the torso sinks below
terminationHeight. Resets put the torso upright at the start height, at rest, and every joint at
its rest pose plus U(-0.2, 0.2) (clipped to its range) with velocity U(-0.1, 0.1).

The model must have a free root joint (joint 0) followed by hinges only, one qpos per dof.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import rotations
from .base import PhysicsFrame, TaskLogic

TARGET = (1000.0, 0.0, 0.0)
HEAD = 12  # torso slots at the start of the observation
UP_SLOT, HEADING_SLOT = 10, 11


class LocomotionCarry(NamedTuple):
    potentials: jax.Array  # (N,) -planar distance to target / dt, this step
    prev_potentials: jax.Array  # (N,) the same, previous step


class TorsoTerms(NamedTuple):
    """Torso quantities of a frame (each (N,) unless noted); angles in [0, 2 pi) or as computed."""

    height: jax.Array
    vel_loc: jax.Array  # (N, 3) world linear velocity in the torso frame
    angvel_loc: jax.Array  # (N, 3) angular velocity in the torso frame
    yaw: jax.Array
    roll: jax.Array
    angle_to_target: jax.Array  # upstream's x-z plane target angle minus yaw
    up_proj: jax.Array  # z component of the torso's up axis
    heading_proj: jax.Array  # torso x axis . planar direction to the target
    potentials: jax.Array


class LocomotionTask(TaskLogic):
    """Config, reset sampling, potentials, torso observations and shared reward terms."""

    start_height: ClassVar[float]  # torso height of a fresh episode

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        c = env_cfg
        self.power_scale = float(c["powerScale"])
        self.heading_weight = float(c["headingWeight"])
        self.up_weight = float(c["upWeight"])
        self.actions_cost = float(c["actionsCost"])
        self.energy_cost = float(c["energyCost"])
        self.dof_vel_scale = float(c["dofVelocityScale"])
        self.contact_force_scale = float(c["contactForceScale"])
        self.joints_at_limit_cost = float(c["jointsAtLimitCost"])
        self.death_cost = float(c["deathCost"])
        self.termination_height = float(c["terminationHeight"])
        lower, upper = info.joint_range[1:, 0], info.joint_range[1:, 1]  # joint 0 is the root
        self.dof_lower = jnp.asarray(np.minimum(lower, upper), jnp.float32)
        self.dof_upper = jnp.asarray(np.maximum(lower, upper), jnp.float32)
        # rest pose: 0, or the nearest limit when 0 lies outside the range (as upstream)
        init = np.where(lower > 0, lower, np.where(upper < 0, upper, 0.0))
        self.initial_dof_pos = jnp.asarray(init, jnp.float32)
        self.target = jnp.asarray(TARGET, jnp.float32)

    def action_scale(self):
        # the motors' gears turn ctrl into torque; powerScale scales them all
        return np.full(self.info.nu, self.power_scale)

    def _potential(self, torso_pos):
        to_target = (self.target - torso_pos).at[:, 2].set(0.0)
        return -jnp.linalg.norm(to_target, axis=-1) / self.sim_dt

    def initial_carry(self, num_envs):
        start = jnp.broadcast_to(jnp.asarray([0.0, 0.0, self.start_height]), (num_envs, 3))
        pot = self._potential(start)
        return LocomotionCarry(pot, pot)

    def sample_reset(self, key, num_envs):
        kp, kv = jax.random.split(key)
        nd = self.initial_dof_pos.shape[0]
        dof = self.initial_dof_pos + jax.random.uniform(kp, (num_envs, nd), minval=-0.2, maxval=0.2)
        dof = jnp.clip(dof, self.dof_lower, self.dof_upper)
        root = jnp.broadcast_to(
            jnp.asarray([0.0, 0.0, self.start_height, 1.0, 0.0, 0.0, 0.0]), (num_envs, 7)
        )
        qpos = jnp.concatenate([root, dof], axis=-1)
        dof_vel = jax.random.uniform(kv, (num_envs, nd), minval=-0.1, maxval=0.1)
        qvel = jnp.concatenate([jnp.zeros((num_envs, 6)), dof_vel], axis=-1)
        return qpos, qvel

    def reset_carry(self, carry, frame, key):
        pot = self._potential(frame.qpos[:, 0:3])
        return LocomotionCarry(pot, pot)

    def torso_terms(self, frame: PhysicsFrame) -> TorsoTerms:
        """Torso terms of ``frame`` from the free joint's qpos (N, 7+) and qvel (N, 6+)."""
        q, v = frame.qpos, frame.qvel
        pos, quat = q[:, 0:3], q[:, 3:7]
        to_target = (self.target - pos).at[:, 2].set(0.0)
        target_dir = to_target / jnp.linalg.norm(to_target, axis=-1, keepdims=True)
        up_proj = rotations.rotate(quat, jnp.array([0.0, 0.0, 1.0]))[:, 2]
        heading_vec = rotations.rotate(quat, jnp.array([1.0, 0.0, 0.0]))
        roll, _, yaw = rotations.euler_xyz(quat)
        return TorsoTerms(
            height=pos[:, 2],
            vel_loc=rotations.rotate_inverse(quat, v[:, 0:3]),
            angvel_loc=v[:, 3:6],  # MuJoCo's free-joint angular velocity is already body-local
            yaw=yaw,
            roll=roll,
            # upstream measures the target angle in the x-z plane; kept for layout fidelity
            angle_to_target=jnp.arctan2(self.target[2] - pos[:, 2], self.target[0] - pos[:, 0])
            - yaw,
            up_proj=up_proj,
            heading_proj=jnp.sum(heading_vec * target_dir, axis=-1),
            potentials=-jnp.linalg.norm(to_target, axis=-1) / self.sim_dt,
        )

    @staticmethod
    def torso_obs(t: TorsoTerms, angvel_scale: float = 1.0, wrap_angles: bool = False):
        """The (N, 12) observation head; ``wrap_angles`` maps yaw, roll and target angle into
        (-pi, pi] (Humanoid does, Ant keeps them as computed)."""
        angles = jnp.stack([t.yaw, t.roll, t.angle_to_target], axis=-1)
        if wrap_angles:
            angles = jnp.arctan2(jnp.sin(angles), jnp.cos(angles))
        angvel = t.angvel_loc if angvel_scale == 1.0 else t.angvel_loc * angvel_scale
        proj = jnp.stack([t.up_proj, t.heading_proj], axis=-1)
        return jnp.concatenate([t.height[:, None], t.vel_loc, angvel, angles, proj], axis=-1)

    def scaled_dof_pos(self, dof_pos):
        """Dof positions (N, D) mapped from [lower, upper] to [-1, 1]."""
        return (2.0 * dof_pos - self.dof_upper - self.dof_lower) / (self.dof_upper - self.dof_lower)

    @staticmethod
    def next_carry(t: TorsoTerms, carry: LocomotionCarry) -> LocomotionCarry:
        return LocomotionCarry(t.potentials, carry.potentials)

    def progress_up_heading(self, obs, carry: LocomotionCarry):
        """Reward terms (N,) each: progress (potential difference), up bonus (upWeight if the up
        projection > 0.93) and heading (headingWeight, scaled down linearly below 0.8)."""
        heading_proj, up_proj = obs[:, HEADING_SLOT], obs[:, UP_SLOT]
        heading = jnp.where(
            heading_proj > 0.8, self.heading_weight, self.heading_weight * heading_proj / 0.8
        )
        up = jnp.where(up_proj > 0.93, self.up_weight, 0.0)
        return carry.potentials - carry.prev_potentials, up, heading

    def fall(self, obs, reward):
        """deathCost and termination where the torso height obs[:, 0] < terminationHeight."""
        fallen = obs[:, 0] < self.termination_height
        return jnp.where(fallen, self.death_cost, reward), fallen
