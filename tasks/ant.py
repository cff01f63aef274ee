"""Ant: run a four-legged ant towards a far target (IsaacGymEnvs' Ant rules).

obs (60) = [torso height, local velocity (3), local angular velocity (3), yaw, roll, angle to
target, up projection, heading projection, dof positions scaled to [-1, 1] (8), dof velocities
* dofVelocityScale (8), foot force-torque sensors * contactForceScale (24), actions (8)].
Reward = progress (potential difference, potential = -planar distance to target / dt) + 0.5 alive
+ upWeight if up projection > 0.93 + heading (headingWeight, scaled below 0.8) - actionsCost
sum(a^2) - energyCost sum(|a * scaled dof vel|) - jointsAtLimitCost #(|scaled dof pos| > 0.99);
deathCost and a reset when the torso is lower than terminationHeight.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from . import rotations
from .base import PhysicsFrame, TaskLogic

TARGET = (1000.0, 0.0, 0.0)
START_HEIGHT = 0.44


class AntCarry(NamedTuple):
    potentials: jax.Array  # (N,) -planar distance to target / dt, this step
    prev_potentials: jax.Array  # (N,) the same, previous step


class Ant(TaskLogic):
    name = "Ant"
    num_obs = 60
    num_actions = 8
    asset_file = "ant.xml"
    default_episode_length = 1000

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

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        # One force-torque sensor at the origin of every body named "*foot*", as upstream.
        for body in list(spec.bodies):
            if "foot" in body.name:
                site = body.add_site(name=f"{body.name}_ft_site")
                for kind in (mujoco.mjtSensor.mjSENS_FORCE, mujoco.mjtSensor.mjSENS_TORQUE):
                    spec.add_sensor(type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site.name)
        # The ant collides with the ground, never with itself.
        for geom in spec.geoms:
            if geom.parent.name != "world":
                geom.contype, geom.conaffinity = 0, 1
        spec.body("torso").pos = [0.0, 0.0, START_HEIGHT]

    def action_scale(self):
        return np.full(self.info.nu, self.power_scale)

    def _potential(self, torso_pos):
        to_target = (self.target - torso_pos).at[:, 2].set(0.0)
        return -jnp.linalg.norm(to_target, axis=-1) / self.sim_dt

    def initial_carry(self, num_envs):
        start = jnp.broadcast_to(jnp.asarray([0.0, 0.0, START_HEIGHT]), (num_envs, 3))
        pot = self._potential(start)
        return AntCarry(pot, pot)

    def sample_reset(self, key, num_envs):
        kp, kv = jax.random.split(key)
        nd = self.initial_dof_pos.shape[0]
        dof = self.initial_dof_pos + jax.random.uniform(kp, (num_envs, nd), minval=-0.2, maxval=0.2)
        dof = jnp.clip(dof, self.dof_lower, self.dof_upper)
        root = jnp.broadcast_to(
            jnp.asarray([0.0, 0.0, START_HEIGHT, 1.0, 0.0, 0.0, 0.0]), (num_envs, 7)
        )
        qpos = jnp.concatenate([root, dof], axis=-1)
        dof_vel = jax.random.uniform(kv, (num_envs, nd), minval=-0.1, maxval=0.1)
        qvel = jnp.concatenate([jnp.zeros((num_envs, 6)), dof_vel], axis=-1)
        return qpos, qvel

    def reset_carry(self, carry, frame):
        pot = self._potential(frame.qpos[:, 0:3])
        return AntCarry(pot, pot)

    def observe(self, frame: PhysicsFrame, actions, carry):
        q, v = frame.qpos, frame.qvel
        pos, quat = q[:, 0:3], q[:, 3:7]
        to_target = (self.target - pos).at[:, 2].set(0.0)
        target_dir = to_target / jnp.linalg.norm(to_target, axis=-1, keepdims=True)
        potentials = -jnp.linalg.norm(to_target, axis=-1) / self.sim_dt
        up_proj = rotations.rotate(quat, jnp.array([0.0, 0.0, 1.0]))[:, 2]
        heading_vec = rotations.rotate(quat, jnp.array([1.0, 0.0, 0.0]))
        heading_proj = jnp.sum(heading_vec * target_dir, axis=-1)
        vel_loc = rotations.rotate_inverse(quat, v[:, 0:3])
        angvel_loc = v[:, 3:6]  # MuJoCo's free-joint angular velocity is already body-local
        roll, _, yaw = rotations.euler_xyz(quat)
        # Upstream measures the target angle in the x-z plane; kept for layout fidelity.
        angle_to_target = jnp.arctan2(self.target[2] - pos[:, 2], self.target[0] - pos[:, 0]) - yaw
        dof_pos_scaled = (2.0 * q[:, 7:] - self.dof_upper - self.dof_lower) / (
            self.dof_upper - self.dof_lower
        )
        obs = jnp.concatenate(
            [
                pos[:, 2:3],
                vel_loc,
                angvel_loc,
                yaw[:, None],
                roll[:, None],
                angle_to_target[:, None],
                up_proj[:, None],
                heading_proj[:, None],
                dof_pos_scaled,
                v[:, 6:] * self.dof_vel_scale,
                frame.sensordata * self.contact_force_scale,
                actions,
            ],
            axis=-1,
        )
        return obs, AntCarry(potentials, carry.potentials)

    def reward_and_termination(self, obs, actions, carry):
        heading_proj, up_proj = obs[:, 11], obs[:, 10]
        heading = jnp.where(
            heading_proj > 0.8, self.heading_weight, self.heading_weight * heading_proj / 0.8
        )
        up = jnp.where(up_proj > 0.93, self.up_weight, 0.0)
        actions_cost = jnp.sum(actions**2, axis=-1)
        energy = jnp.sum(jnp.abs(actions * obs[:, 20:28]), axis=-1)
        at_limit = jnp.sum(obs[:, 12:20] > 0.99, axis=-1)
        progress = carry.potentials - carry.prev_potentials
        reward = (
            progress
            + 0.5
            + up
            + heading
            - self.actions_cost * actions_cost
            - self.energy_cost * energy
            - self.joints_at_limit_cost * at_limit
        )
        fallen = obs[:, 0] < self.termination_height
        return jnp.where(fallen, self.death_cost, reward), fallen
