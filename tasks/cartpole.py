"""Cartpole: balance a pole on a cart by pushing the cart (IsaacGymEnvs' Cartpole rules).

obs (4) = [cart position, cart velocity, pole angle, pole angular velocity]; action (1) = push
force / maxEffort. Reward 1 - angle^2 - 0.01|cart vel| - 0.005|pole vel|, -2 and a reset when the
cart leaves +-resetDist or the pole passes +-pi/2; episodes time out after 499 steps (length 500,
upstream's rule: ``TaskLogic.timeout_steps``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from .base import PhysicsFrame, TaskLogic


class Cartpole(TaskLogic):
    name = "Cartpole"
    num_obs = 4
    num_actions = 1
    asset_file = "cartpole.xml"
    actors = {"cartpole": ("slider",)}  # upstream's actor names
    default_episode_length = 500

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        self.max_episode_length = 500  # fixed in IsaacGymEnvs' Cartpole, not read from the config
        self.reset_dist = float(env_cfg["resetDist"])
        self.max_effort = float(env_cfg["maxEffort"])

    @classmethod
    def prepare_spec(cls, spec, env_cfg):
        for geom in spec.geoms:  # an actor never collides with itself in Isaac Gym
            geom.contype, geom.conaffinity = 0, 0
        if not spec.actuators:  # our MJCF and IsaacGymEnvs' URDF carry no motor: add the push
            spec.add_actuator(
                name="push",
                trntype=mujoco.mjtTrn.mjTRN_JOINT,
                target=spec.joints[0].name,
                gear=[1.0, 0, 0, 0, 0, 0],
            )

    def action_scale(self):
        return np.full(self.info.nu, self.max_effort)

    def initial_carry(self, num_envs):
        return ()

    def sample_reset(self, key, num_envs):
        kp, kv = jax.random.split(key)
        qpos = 0.2 * (jax.random.uniform(kp, (num_envs, self.info.nq)) - 0.5)
        qvel = 0.5 * (jax.random.uniform(kv, (num_envs, self.info.nv)) - 0.5)
        return qpos, qvel

    def reset_carry(self, carry, frame, key):
        return ()

    def observe(self, frame: PhysicsFrame, actions, carry):
        q, v = frame.qpos, frame.qvel
        obs = jnp.stack([q[:, 0], v[:, 0], q[:, 1], v[:, 1]], axis=-1)
        return obs, carry

    def reward_and_termination(self, obs, actions, carry):
        cart_pos, cart_vel, pole_angle, pole_vel = obs[:, 0], obs[:, 1], obs[:, 2], obs[:, 3]
        reward = 1.0 - pole_angle**2 - 0.01 * jnp.abs(cart_vel) - 0.005 * jnp.abs(pole_vel)
        failed = (jnp.abs(cart_pos) > self.reset_dist) | (jnp.abs(pole_angle) > jnp.pi / 2)
        return jnp.where(failed, -2.0, reward), failed
