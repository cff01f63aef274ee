"""Pendulum swing-up: a torque-limited pole must swing up and balance (a task outside the suite).

obs (3) = [cos angle, sin angle, angular velocity]; action (1) = torque / maxTorque. The angle is
0 upright. Reward -(angle^2 + 0.1 velocity^2 + 0.001 torque^2), angle wrapped to [-pi, pi];
no early termination: episodes end at ``episodeLength`` steps. With maxTorque below the pole's
gravity torque (m g l / 2 = 2.45 N m) it must pump energy before it can balance. It keeps no
per-env buffers, so ``initial_carry`` and ``reset_carry`` keep their defaults.
"""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from isaacgymenvs_gmi import PhysicsFrame, TaskLogic, register_task


@register_task("Pendulum")
class Pendulum(TaskLogic):
    name = "Pendulum"
    num_obs = 3
    num_actions = 1
    asset_file = str(Path(__file__).with_name("pendulum.xml"))  # an absolute path: our own model
    default_episode_length = 200
    keeps_carry = False

    def __init__(self, env_cfg, sim_dt, info):
        super().__init__(env_cfg, sim_dt, info)
        self.max_torque = float(env_cfg["maxTorque"])

    @classmethod
    def check_config(cls, env_cfg):
        from isaacgymenvs_gmi import TaskConfigError

        if float(env_cfg.get("maxTorque", 0.0)) <= 0.0:
            raise TaskConfigError("maxTorque", env_cfg.get("maxTorque"), "must be > 0")

    def action_scale(self):
        return np.full(self.num_actions, self.max_torque)

    def sample_reset(self, key, num_envs):
        ka, kv = jax.random.split(key)
        angle = jax.random.uniform(ka, (num_envs, 1), minval=-jnp.pi, maxval=jnp.pi)
        velocity = jax.random.uniform(kv, (num_envs, 1), minval=-1.0, maxval=1.0)
        return angle, velocity

    def observe(self, frame: PhysicsFrame, actions, carry):
        angle, velocity = frame.qpos[:, 0], frame.qvel[:, 0]
        return jnp.stack([jnp.cos(angle), jnp.sin(angle), velocity], axis=-1), carry

    def reward_and_termination(self, obs, actions, carry):
        angle = jnp.arctan2(obs[:, 1], obs[:, 0])  # wrapped to [-pi, pi]
        torque = actions[:, 0] * self.max_torque
        reward = -(angle**2 + 0.1 * obs[:, 2] ** 2 + 0.001 * torque**2)
        return reward, jnp.zeros_like(reward, dtype=bool)
