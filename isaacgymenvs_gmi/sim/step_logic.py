"""Episode bookkeeping around a task, shared by every physics backend (pure JAX).

After the physics of an env step, :func:`finish_step` computes observations, rewards and
terminations with the task's rules, advances episode counters, and resets finished envs at once:
their returned observation is the first one of the new episode (computed from a freshly sampled
state, with zero sensor readings and zero previous actions), as in vectorised auto-reset APIs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from isaacgymenvs_gmi.tasks.base import PhysicsFrame, TaskLogic


class EnvBuffers(NamedTuple):
    """Per-env episode state carried between steps (all leading dims N)."""

    progress: jax.Array  # (N,) int32, steps taken in the current episode
    episode_return: jax.Array  # (N,) float32, undiscounted reward so far
    carry: Any  # task-specific pytree
    key: jax.Array  # PRNG key


class StepOutput(NamedTuple):
    """What an env step hands to the learner (all on the simulation device)."""

    obs: jax.Array  # (N, num_obs) float32, clipped to +-clipObservations
    reward: jax.Array  # (N,) float32
    reset: jax.Array  # (N,) bool, episode ended in this step
    timeout: jax.Array  # (N,) bool, ended by the episode length limit
    episode_return: jax.Array  # (N,) float32, return of the episode that ended (0 elsewhere)
    episode_length: jax.Array  # (N,) int32, its length (0 elsewhere)
    episode_sums: jax.Array  # (3,) float32: sum of those returns, of those lengths, their count


class ResetState(NamedTuple):
    """Physics state a backend must load where ``StepOutput.reset`` is true."""

    qpos: jax.Array  # (N, nq)
    qvel: jax.Array  # (N, nv)


def _select(mask: jax.Array, a: Any, b: Any) -> Any:
    """Row-wise ``where(mask, a, b)`` over matching pytrees."""

    def pick(x, y):
        m = mask.reshape(mask.shape + (1,) * (x.ndim - 1))
        return jnp.where(m, x, y)

    return jax.tree_util.tree_map(pick, a, b)


class StepLogic:
    """Binds a task to N envs; its methods are pure and meant to be jitted by a backend."""

    def __init__(self, task: TaskLogic, num_envs: int, clip_obs: float, clip_actions: float):
        self.task = task
        self.num_envs = num_envs
        self.clip_obs = clip_obs
        self.clip_actions = clip_actions
        # ctrl[:, k] = action[:, ctrl_index[k]] * ctrl_scale[k]  (actuator k, file order)
        self.ctrl_index = np.asarray(task.info.actuator_action)
        self.ctrl_scale = np.asarray(task.action_scale(), np.float64)[self.ctrl_index]

    def clip(self, actions: jax.Array) -> jax.Array:
        return jnp.clip(actions.astype(jnp.float32), -self.clip_actions, self.clip_actions)

    def _fresh(self, key: jax.Array, carry: Any) -> tuple[ResetState, jax.Array, Any]:
        """A new episode for every env: state, first observation, task carry."""
        n, task = self.num_envs, self.task
        qpos, qvel = task.sample_reset(key, n)
        frame = PhysicsFrame(qpos, qvel, jnp.zeros((n, task.info.nsensordata), jnp.float32))
        carry = task.reset_carry(carry, frame)
        obs, carry = task.observe(frame, jnp.zeros((n, task.num_actions), jnp.float32), carry)
        return ResetState(qpos, qvel), obs, carry

    def start(self, key: jax.Array) -> tuple[EnvBuffers, ResetState, jax.Array]:
        """Buffers, initial physics state and clipped first observations for all envs."""
        key, sub = jax.random.split(key)
        state, obs, carry = self._fresh(sub, self.task.initial_carry(self.num_envs))
        zeros = jnp.zeros((self.num_envs,), jnp.int32)
        bufs = EnvBuffers(zeros, jnp.zeros((self.num_envs,), jnp.float32), carry, key)
        return bufs, state, jnp.clip(obs, -self.clip_obs, self.clip_obs)

    def finish_step(
        self, frame: PhysicsFrame, actions: jax.Array, bufs: EnvBuffers
    ) -> tuple[StepOutput, EnvBuffers, ResetState]:
        """Rewards and resets for ``frame`` reached by applying clipped ``actions`` (N, A)."""
        task = self.task
        obs, carry = task.observe(frame, actions, bufs.carry)
        reward, terminated = task.reward_and_termination(obs, actions, carry)
        progress = bufs.progress + 1
        ep_return = bufs.episode_return + reward
        timeout = progress >= task.max_episode_length
        done = terminated | timeout

        key, sub = jax.random.split(bufs.key)
        reset_state, reset_obs, reset_carry = self._fresh(sub, carry)
        out = StepOutput(
            obs=jnp.clip(jnp.where(done[:, None], reset_obs, obs), -self.clip_obs, self.clip_obs),
            reward=reward.astype(jnp.float32),
            reset=done,
            timeout=timeout,
            episode_return=jnp.where(done, ep_return, 0.0),
            episode_length=jnp.where(done, progress, 0),
            episode_sums=jnp.stack(
                [
                    jnp.sum(jnp.where(done, ep_return, 0.0)),
                    jnp.sum(jnp.where(done, progress, 0)),
                    jnp.sum(done),
                ]
            ).astype(jnp.float32),
        )
        bufs = EnvBuffers(
            progress=jnp.where(done, 0, progress),
            episode_return=jnp.where(done, 0.0, ep_return),
            carry=_select(done, reset_carry, carry),
            key=key,
        )
        return out, bufs, reset_state
