"""Episode bookkeeping around a task, shared by every physics backend (pure JAX).

After an env step's physics, :meth:`StepLogic.finish_step` applies the task's rules, advances
episode counters and auto-resets finished envs: their observation is the new episode's first.
Fresh episodes come from a pool (:class:`FreshPool`) of ``POOL_FACTOR * N`` sampled at once
(pool k from the k-th split of the episode key), each handed out once, in order; a step starts
a new pool when fewer than N are left. A device backend keeps two pools (:class:`PoolRing`) and
flips between them branch-free (a conditional would copy the pool on the CPU, sync on a GPU);
the host refills the one left behind (:meth:`StepLogic.refill`). A host backend keeps one pool
and swaps it at the same steps, so both backends hand out the same episodes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from isaacgymenvs_gmi.tasks.base import PhysicsFrame, TaskLogic

POOL_FACTOR = 4


class FreshPool(NamedTuple):
    """P freshly sampled episodes, not yet handed out from index ``next`` on."""

    qpos: jax.Array  # (P, nq)
    qvel: jax.Array  # (P, nv)
    obs: jax.Array  # (P, num_obs) first observation, clipped
    carry: Any  # task pytree with leading dim P
    next: jax.Array  # () int32


class PoolRing(NamedTuple):
    """Two pools of P fresh episodes in ``both`` (2P rows): the one in use starts at row
    ``base``; the other is the next, sampled ahead."""

    both: FreshPool  # arrays (2P, ...); ``next``: entries of the pool in use handed out
    base: jax.Array  # () int32, 0 or P: where the pool in use starts
    switches: jax.Array  # () int32, pools used up so far (each leaves a half to refill)


class EnvBuffers(NamedTuple):
    """Per-env episode state carried between steps (leading dims N, but the pool's)."""

    progress: jax.Array  # (N,) int32, steps taken in the current episode
    episode_return: jax.Array  # (N,) float32, undiscounted reward so far
    carry: Any  # task-specific pytree
    key: jax.Array  # PRNG key: the next pool's
    pool: FreshPool | PoolRing  # the start's pool; a device backend's ring from then on
    totals: jax.Array  # (3,) float32: summed return and length of finished episodes, their count


class StepOutput(NamedTuple):
    """What an env step hands to the learner (all on the simulation device)."""

    obs: jax.Array  # (N, num_obs) float32, clipped to +-clipObservations
    reward: jax.Array  # (N,) float32
    reset: jax.Array  # (N,) bool, episode ended in this step
    timeout: jax.Array  # (N,) bool, ended by the episode length limit
    episode_return: jax.Array  # (N,) float32, return of the episode that ended (0 elsewhere)
    episode_length: jax.Array  # (N,) int32, its length (0 elsewhere)


class ResetState(NamedTuple):
    """Physics state a backend must load where ``StepOutput.reset`` is true."""

    qpos: jax.Array  # (N, nq)
    qvel: jax.Array  # (N, nv)


def _select(mask: jax.Array, a: Any, b: Any) -> Any:
    """Row-wise ``where(mask, a, b)`` over matching pytrees."""
    return jax.tree_util.tree_map(
        lambda x, y: jnp.where(mask.reshape(mask.shape + (1,) * (x.ndim - 1)), x, y), a, b
    )


class StepLogic:
    """Binds a task to N envs; its methods are pure and meant to be jitted by a backend."""

    def __init__(self, task: TaskLogic, num_envs: int, clip_obs: float, clip_actions: float):
        self.task = task
        self.num_envs = num_envs
        self.clip_obs = clip_obs
        self.clip_actions = clip_actions
        # ctrl[:, k] = action[:, ctrl_index[k]] * ctrl_scale[k] + ctrl_offset[k] (file order)
        self.ctrl_index = np.asarray(task.info.actuator_action)
        self.ctrl_scale = np.asarray(task.action_scale(), np.float64)[self.ctrl_index]
        self.ctrl_offset = np.asarray(task.action_offset(), np.float64)[self.ctrl_index]

    def pack(self, out: StepOutput) -> jax.Array:
        """``out`` as one (N, num_obs + 5) float32 array [obs | reward | reset | timeout |
        episode return | episode length]."""
        f32 = jnp.float32
        tail = [
            out.reward,
            out.reset.astype(f32),
            out.timeout.astype(f32),
            out.episode_return,
            out.episode_length.astype(f32),
        ]
        return jnp.concatenate([out.obs, jnp.stack(tail, axis=1)], axis=1)

    def clip(self, actions: jax.Array) -> jax.Array:
        return jnp.clip(actions.astype(jnp.float32), -self.clip_actions, self.clip_actions)

    def _fill_pool(self, key: jax.Array) -> FreshPool:
        """Sample ``POOL_FACTOR * N`` new episodes: state, first observation, task carry."""
        task, size = self.task, POOL_FACTOR * self.num_envs
        qpos, qvel = task.sample_reset(key, size)
        frame = PhysicsFrame(qpos, qvel, jnp.zeros((size, task.info.nsensordata), jnp.float32))
        # the task's own draws (commands, goals): a stream folded off the states' key
        carry = task.reset_carry(task.initial_carry(size), frame, jax.random.fold_in(key, 1))
        obs, carry = task.observe(frame, jnp.zeros((size, task.num_actions), jnp.float32), carry)
        if not task.keeps_carry:
            carry = ()
        obs = jnp.clip(obs, -self.clip_obs, self.clip_obs)
        return FreshPool(qpos, qvel, obs, carry, jnp.zeros((), jnp.int32))

    def _take(
        self, pool: FreshPool, done: jax.Array, base: jax.Array | int = 0
    ) -> tuple[FreshPool, ResetState, Any, Any]:
        """The k-th env where ``done`` (N,) gets entry next + k of the pool at row ``base``
        (rows picked for other envs are meaningless)."""
        rows = base + jnp.clip(pool.next + jnp.cumsum(done) - 1, 0, self.pool_size - 1)

        def pick(x):
            return x[rows]

        state = ResetState(pick(pool.qpos), pick(pool.qvel))
        carry = jax.tree_util.tree_map(pick, pool.carry)
        pool = pool._replace(next=pool.next + jnp.sum(done, dtype=jnp.int32))
        return pool, state, pick(pool.obs), carry

    def observe_and_score(
        self, frame: PhysicsFrame, actions: jax.Array, carry: Any
    ) -> tuple[jax.Array, jax.Array, jax.Array, Any]:
        """The task's rules for ``frame`` reached by clipped ``actions`` (N, A): clipped
        observations (N, num_obs), reward (N,) float32, termination (N,) bool and the carry."""
        task = self.task
        obs, new_carry = task.observe(frame, actions, carry)
        reward, terminated = task.reward_and_termination(obs, actions, new_carry)
        if not task.keeps_carry:
            new_carry = carry  # observe's carry only fed the reward
        obs = jnp.clip(obs, -self.clip_obs, self.clip_obs)
        return obs, reward.astype(jnp.float32), terminated, new_carry

    @property
    def pool_size(self) -> int:
        return POOL_FACTOR * self.num_envs

    def new_pool(self, key: jax.Array) -> tuple[jax.Array, FreshPool]:
        """(the key for the next pool, a new, unused pool of fresh episodes)."""
        key, sub = jax.random.split(key)
        return key, self._fill_pool(sub)

    def ring(self, bufs: EnvBuffers) -> EnvBuffers:
        """``bufs`` from :meth:`start`, its pool made the first of a :class:`PoolRing`."""
        key, ahead = self.new_pool(bufs.key)
        both = jax.tree_util.tree_map(  # ``next`` left out (a None leaf is no leaf)
            lambda a, b: jnp.concatenate([a, b]),
            bufs.pool._replace(next=None),
            ahead._replace(next=None),
        )._replace(next=bufs.pool.next)
        zero = jnp.zeros((), jnp.int32)
        return bufs._replace(key=key, pool=PoolRing(both, zero, zero))

    def refill(self, bufs: EnvBuffers) -> EnvBuffers:
        """``bufs`` with a new pool in the ring's half not in use (once per pool used up)."""
        key, fresh = self.new_pool(bufs.key)
        ring = bufs.pool
        spare = self.pool_size - ring.base

        def put(whole, part):
            return jax.lax.dynamic_update_slice_in_dim(whole, part, spare, axis=0)

        both = jax.tree_util.tree_map(put, ring.both._replace(next=None), fresh._replace(next=None))
        return bufs._replace(key=key, pool=ring._replace(both=both._replace(next=ring.both.next)))

    def turn_if_low(self, ring: PoolRing) -> PoolRing:
        """``ring`` moved on to its next pool when fewer than N entries are left, branch-free."""
        low = self.pool_size - ring.both.next < self.num_envs
        return PoolRing(
            ring.both._replace(next=jnp.where(low, 0, ring.both.next)),
            jnp.where(low, self.pool_size - ring.base, ring.base),
            ring.switches + low.astype(jnp.int32),
        )

    def start(self, key: jax.Array) -> tuple[EnvBuffers, ResetState, jax.Array]:
        """Buffers, initial physics state and clipped first observations for all envs."""
        key, sub = jax.random.split(key)
        everyone = jnp.ones((self.num_envs,), bool)
        pool, state, obs, carry = self._take(self._fill_pool(sub), everyone)
        zeros = jnp.zeros((self.num_envs,), jnp.int32)
        ep_return = jnp.zeros((self.num_envs,), jnp.float32)
        bufs = EnvBuffers(zeros, ep_return, carry, key, pool, jnp.zeros((3,), jnp.float32))
        return bufs, state, obs

    def finish_step(
        self, frame: PhysicsFrame, actions: jax.Array, bufs: EnvBuffers
    ) -> tuple[StepOutput, EnvBuffers, ResetState]:
        """Rewards and resets for ``frame`` reached by clipped ``actions`` (N, A); fresh
        episodes come from ``bufs.pool``, a :class:`PoolRing` already turned for this step."""
        obs, reward, terminated, carry = self.observe_and_score(frame, actions, bufs.carry)
        progress = bufs.progress + 1
        ep_return = bufs.episode_return + reward
        timeout = progress >= self.task.timeout_steps
        done = terminated | timeout

        ring = bufs.pool
        both, reset_state, reset_obs, reset_carry = self._take(ring.both, done, ring.base)
        out = StepOutput(
            obs=jnp.where(done[:, None], reset_obs, obs),
            reward=reward,
            reset=done,
            timeout=timeout,
            episode_return=jnp.where(done, ep_return, 0.0),
            episode_length=jnp.where(done, progress, 0),
        )
        bufs = EnvBuffers(
            progress=jnp.where(done, 0, progress),
            episode_return=jnp.where(done, 0.0, ep_return),
            carry=_select(done, reset_carry, carry),
            key=bufs.key,
            pool=ring._replace(both=both),
            totals=bufs.totals
            + jnp.stack([out.episode_return.sum(), out.episode_length.sum(), done.sum()]),
        )
        return out, bufs, reset_state
