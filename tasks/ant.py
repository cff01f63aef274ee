"""Ant: run a four-legged ant towards a far target (IsaacGymEnvs' Ant rules).

obs (60) = [torso height, local velocity (3), local angular velocity (3), yaw, roll, angle to
target, up projection, heading projection, dof positions scaled to [-1, 1] (8), dof velocities
* dofVelocityScale (8), foot force-torque sensors * contactForceScale (24), actions (8)].
Reward = progress (potential difference, potential = -planar distance to target / dt) + 0.5 alive
+ upWeight if up projection > 0.93 + heading (headingWeight, scaled below 0.8) - actionsCost
sum(a^2) - energyCost sum(|a * scaled dof vel|) - jointsAtLimitCost #(scaled dof pos > 0.99)
(values above 0.99, not absolute values: upstream's code); deathCost and a reset when the torso
is lower than terminationHeight. Episodes time out after episodeLength - 1 steps, upstream's rule
(``TaskLogic.timeout_steps``). The torso terms, resets and the shared reward terms live in
:mod:`.locomotion`.
"""

from __future__ import annotations

import jax.numpy as jnp
import mujoco

from .base import PhysicsFrame
from .locomotion import HEAD, LocomotionCarry, LocomotionTask

START_HEIGHT = 0.44
AntCarry = LocomotionCarry  # potentials this step and the previous one, (N,) each


class Ant(LocomotionTask):
    name = "Ant"
    num_obs = 60
    num_actions = 8
    asset_file = "ant.xml"
    actors = {"ant": ("torso",)}  # upstream's actor names
    default_episode_length = 1000
    start_height = START_HEIGHT

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

    def observe(self, frame: PhysicsFrame, actions, carry):
        terms = self.torso_terms(frame)
        obs = jnp.concatenate(
            [
                self.torso_obs(terms),
                self.scaled_dof_pos(frame.qpos[:, 7:]),
                frame.qvel[:, 6:] * self.dof_vel_scale,
                frame.sensordata * self.contact_force_scale,
                actions,
            ],
            axis=-1,
        )
        return obs, self.next_carry(terms, carry)

    def reward_and_termination(self, obs, actions, carry):
        progress, up, heading = self.progress_up_heading(obs, carry)
        actions_cost = jnp.sum(actions**2, axis=-1)
        energy = jnp.sum(jnp.abs(actions * obs[:, HEAD + 8 : HEAD + 16]), axis=-1)
        at_limit = jnp.sum(obs[:, HEAD : HEAD + 8] > 0.99, axis=-1)
        reward = (
            progress
            + 0.5
            + up
            + heading
            - self.actions_cost * actions_cost
            - self.energy_cost * energy
            - self.joints_at_limit_cost * at_limit
        )
        return self.fall(obs, reward)
