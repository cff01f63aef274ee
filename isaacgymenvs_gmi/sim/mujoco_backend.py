"""MuJoCo's C engine for all worlds of a GMI: float64 physics through ``mujoco.rollout`` (a C++
thread pool over the worlds), task rules as one jitted JAX call per env step on the host, episode
bookkeeping in numpy."""

from __future__ import annotations

import copy

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import rollout

from isaacgymenvs_gmi.tasks.base import PhysicsFrame, stateful_actuator_qpos

from .backend import PhysicsBackend
from .host_episodes import HostEpisodes
from .step_logic import StepLogic, StepOutput
from .world_params import WorldUpdate

FULL_PHYSICS = mujoco.mjtState.mjSTATE_FULLPHYSICS


def aligned_empty(shape: tuple[int, ...], dtype, alignment: int = 64) -> np.ndarray:
    """An uninitialised C-contiguous array whose data starts on an ``alignment``-byte boundary
    (XLA's CPU client reads such a numpy input in place)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start : start + size].view(dtype).reshape(shape)


def shared_input(x: np.ndarray, device: jax.Device) -> jax.Array | np.ndarray:
    """A JAX array on the CPU ``device`` over ``x``'s memory (``x`` itself where the client would
    copy). JAX takes arrays for immutable: change ``x`` only while no call reading it is in
    flight, and never donate the view."""
    view = jax.device_put(x, device)
    return view if view.unsafe_buffer_pointer() == x.ctypes.data else x


def host_copy(x: jax.Array) -> np.ndarray:
    """``x`` copied into a fresh 64-byte-aligned host array."""
    out = aligned_empty(x.shape, x.dtype)
    np.copyto(out, np.asarray(x))
    return out


class _HeldResult:
    """Exposes a finished JAX CPU array's memory to numpy, writable, and keeps it alive."""

    __slots__ = ("__array_interface__", "_result")

    def __init__(self, result: jax.Array):
        self._result = result
        result.block_until_ready()
        self.__array_interface__ = {
            "shape": result.shape,
            "typestr": result.dtype.str,
            "data": (result.unsafe_buffer_pointer(), False),
            "version": 3,
        }


def writable_view(result: jax.Array) -> np.ndarray:
    """A zero-copy, writable numpy view of the CPU array ``result``, which the caller hands over
    for good: nothing may pass it to JAX afterwards (JAX arrays are immutable to JAX)."""
    return np.asarray(_HeldResult(result))


class WorldBatch:
    """N MuJoCo worlds of one model, stepped ``nstep`` steps at a time; ``state`` (N, nstate)
    float64 is every world's full physics state (time, qpos, qvel, act, ...)."""

    def __init__(self, model: mujoco.MjModel, num_envs: int, nstep: int, num_threads: int):
        self.model = model
        self.num_envs = num_envs
        self.nstep = nstep
        self.num_threads = max(1, int(num_threads))
        self._rollout = rollout.Rollout(nthread=self.num_threads if self.num_threads > 1 else None)
        self._datas = [mujoco.MjData(model) for _ in range(self.num_threads)]
        nstate = mujoco.mj_stateSize(model, FULL_PHYSICS)
        initial = np.empty(nstate)
        mujoco.mj_getState(model, mujoco.MjData(model), initial, FULL_PHYSICS)
        self.state = np.tile(initial, (num_envs, 1))  # (N, nstate): every world at qpos0
        self._out_state = np.empty((num_envs, nstep, nstate))
        self._out_sensor = np.empty((num_envs, nstep, model.nsensordata))
        self._ctrl = np.zeros((num_envs, nstep, model.nu))
        self._models = [model] * num_envs  # the fast path takes one model per world
        self.qpos_slice = slice(1, 1 + model.nq)
        self.qvel_slice = slice(1 + model.nq, 1 + model.nq + model.nv)
        self.act_slice = slice(self.qvel_slice.stop, self.qvel_slice.stop + model.na)
        self.act_qpos_index = stateful_actuator_qpos(model)  # see :meth:`load`

    @property
    def qpos(self) -> np.ndarray:
        return self.state[:, self.qpos_slice]

    @property
    def qvel(self) -> np.ndarray:
        return self.state[:, self.qvel_slice]

    @property
    def qpos_qvel(self) -> np.ndarray:
        """(N, nq + nv): MuJoCo's state keeps them side by side."""
        return self.state[:, self.qpos_slice.start : self.qvel_slice.stop]

    @property
    def sensordata(self) -> np.ndarray:
        return self._out_sensor[:, -1]

    def step(
        self, ctrl: np.ndarray, scale: np.ndarray | float = 1.0, offset: np.ndarray | None = None
    ) -> None:
        """Advance every world by ``nstep`` steps holding ``ctrl * scale + offset`` (N, nu)."""
        np.multiply(ctrl, scale, out=self._ctrl[:, 0, :])
        if offset is not None:
            self._ctrl[:, 0, :] += offset
        if self.nstep > 1:
            self._ctrl[:, 1:, :] = self._ctrl[:, :1, :]
        self._rollout.rollout(
            self._models,
            self._datas,
            self.state,
            self._ctrl,
            nstep=self.nstep,
            state=self._out_state,
            sensordata=self._out_sensor,
            control_spec=mujoco.mjtState.mjSTATE_CTRL,
            skip_checks=True,
        )
        self.state[:] = self._out_state[:, -1]

    def apply(self, update: WorldUpdate) -> None:
        """Per-world model fields for worlds ``update.rows`` (each world then gets a model of its
        own) and gravity for every world."""
        if update.fields and self._models[0] is self._models[-1] and self.num_envs > 1:
            self._models = [copy.copy(self.model) for _ in range(self.num_envs)]
        for i, row in enumerate(update.rows.tolist()):
            world = self._models[row]
            for name, values in update.fields.items():
                getattr(world, name)[...] = values[i]
        if update.gravity is not None:
            for world in {id(m): m for m in self._models}.values():
                world.opt.gravity[:] = update.gravity

    def load(self, rows: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set worlds ``rows`` (k,) to qpos (k, nq) and qvel (k, nv); actuator activations
        (intvelocity targets) restart at ``qpos[:, act_qpos_index]``."""
        if rows.size != len(qpos) or rows.size != len(qvel):
            raise ValueError(f"{rows.size} worlds selected, {len(qpos)}/{len(qvel)} states given")
        if rows.size:
            self.state[rows, self.qpos_slice] = qpos
            self.state[rows, self.qvel_slice] = qvel
            if self.act_qpos_index.size:
                self.state[rows, self.act_slice] = qpos[:, self.act_qpos_index]
            self.state[rows, 0] = 0.0

    def close(self) -> None:
        self._rollout.close()


class MujocoBackend(PhysicsBackend):
    """Task + episode logic over a :class:`WorldBatch`. One jitted call per env step scores the
    task; episode counters (:class:`HostEpisodes`), the carry and the pool of new episodes stay
    on the host, where finished envs take theirs by row indexing (no gathers in the jit)."""

    name = "mujoco"

    def __init__(
        self,
        logic: StepLogic,
        model: mujoco.MjModel,
        nstep: int,
        num_threads: int,
        seed: int,
        world: WorldUpdate | None = None,
    ):
        self.logic = logic
        self.worlds = WorldBatch(model, logic.num_envs, nstep, num_threads)
        if world is not None:
            self.worlds.apply(world)
        self._ctrl_offset = logic.ctrl_offset if logic.ctrl_offset.any() else None
        # float32 host buffers [qpos | qvel | sensordata] and clipped actions, 64-byte aligned
        # so that JAX reads them in place
        nq, nv, ns = model.nq, model.nv, model.nsensordata
        self._host = aligned_empty((logic.num_envs, nq + nv + ns), np.float32)
        self._actions = aligned_empty((logic.num_envs, logic.task.num_actions), np.float32)
        # task logic runs on the host whatever JAX's default device; inputs are shared views
        self._cpu = jax.devices("cpu")[0]
        on_host = jax.sharding.SingleDeviceSharding(self._cpu)
        self._host_in = shared_input(self._host, self._cpu)
        self._actions_in = shared_input(self._actions, self._cpu)
        cuts = self._cuts = (nq, nq + nv)

        def score(host, actions, carry):
            """-> (N, num_obs + 2) [clipped obs | reward | terminated] and the task's carry."""
            frame = PhysicsFrame(*jnp.split(host, cuts, axis=1))
            obs, reward, terminated, carry = logic.observe_and_score(frame, actions, carry)
            flags = terminated.astype(jnp.float32)
            return jnp.concatenate([obs, reward[:, None], flags[:, None]], axis=1), carry

        self._score = jax.jit(score, in_shardings=on_host, out_shardings=on_host)
        self._new_pool = jax.jit(logic.new_pool, in_shardings=on_host, out_shardings=on_host)
        self._start = jax.jit(logic.start, in_shardings=on_host, out_shardings=on_host)
        self._seed = seed
        self._ctrl_identity = bool((logic.ctrl_index == np.arange(len(logic.ctrl_index))).all())
        self._episodes = HostEpisodes(logic.num_envs, logic.task.timeout_steps)
        self._key = self._pool = None
        # the task carry: host leaves, their shared views (a pytree), the pool's leaves (P, ...)
        self._carry_leaves, self._carry_in, self._pool_carry = [], (), []
        self._pool_left = 0  # fresh episodes left in the pool
        # the pool's physics states and first observations, on the host
        self._pool_states = (np.empty((0, nq)), np.empty((0, nv)))
        self._pool_obs = np.empty((0, logic.task.num_obs), np.float32)

    @property
    def totals(self) -> np.ndarray:
        return self._episodes.totals

    @property
    def progress(self) -> np.ndarray:
        return self._episodes.progress

    def reset(self) -> jax.Array:
        """Start every env afresh; returns the first observations (N, num_obs)."""
        bufs, state, obs = self._start(jax.random.PRNGKey(self._seed))
        self._key, self._pool = bufs.key, bufs.pool
        carry = jax.tree_util.tree_map(host_copy, bufs.carry)
        self._carry_leaves = jax.tree_util.tree_leaves(carry)
        self._carry_in = jax.tree_util.tree_map(lambda x: shared_input(x, self._cpu), carry)
        self._episodes = HostEpisodes(self.logic.num_envs, self.logic.task.timeout_steps)
        self._adopt_pool(self.logic.pool_size - self.logic.num_envs)
        everyone = np.arange(self.logic.num_envs)
        self.worlds.load(everyone, np.asarray(state.qpos), np.asarray(state.qvel))
        return obs

    def refill_pool(self) -> None:
        self._key, self._pool = self._new_pool(self._key)
        self._adopt_pool(self.logic.pool_size)

    def _adopt_pool(self, left: int) -> None:
        """Keep the pool's states, first observations and carry on the host; ``left`` unused."""
        pool = self._pool
        self._pool_states = (np.array(pool.qpos, np.float64), np.array(pool.qvel, np.float64))
        self._pool_obs = np.array(pool.obs)
        self._pool_carry = [np.asarray(x) for x in jax.tree_util.tree_leaves(pool.carry)]
        self._pool_left = left

    def step(self, actions: np.ndarray) -> StepOutput:
        """One env step for unclipped actions (N, A); numpy outputs, ``obs`` a zero-copy view
        of JAX's result (the hot path: few, in-place host operations)."""
        logic, w, host, clipped = self.logic, self.worlds, self._host, self._actions
        if self._pool_left < logic.num_envs:
            self.refill_pool()
        np.clip(actions, -logic.clip_actions, logic.clip_actions, out=clipped)
        ctrl = clipped if self._ctrl_identity else clipped[:, logic.ctrl_index]
        w.step(ctrl, logic.ctrl_scale, self._ctrl_offset)
        b = self._cuts[1]
        host[:, :b], host[:, b:] = w.qpos_qvel, w.sensordata
        # reads the host buffers in place; reading its outputs waits for it to finish
        packed, carry = self._score(self._host_in, self._actions_in, self._carry_in)
        if self._carry_leaves:
            for mine, new in zip(self._carry_leaves, jax.tree_util.tree_leaves(carry), strict=True):
                np.copyto(mine, new)
        n = logic.task.num_obs
        view = writable_view(packed)  # JAX never reads this result again
        obs = view[:, :n]
        out, done = self._episodes.advance(obs, view[:, n], view[:, n + 1] > 0.5)
        if done.size:
            # the k-th finished env takes the pool's next unused entry + k
            first = logic.pool_size - self._pool_left
            entries = slice(first, first + done.size)
            obs[done] = self._pool_obs[entries]
            for mine, pooled in zip(self._carry_leaves, self._pool_carry, strict=True):
                mine[done] = pooled[entries]
            w.load(done, self._pool_states[0][entries], self._pool_states[1][entries])
            self._pool_left -= done.size
        return out

    def apply_world(self, update: WorldUpdate) -> None:
        self.worlds.apply(update)

    def set_physics_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Load qpos (N, nq) and qvel (N, nv) into every world (tests, tools)."""
        self.worlds.load(np.arange(self.logic.num_envs), qpos, qvel)

    def physics_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.worlds.qpos.copy(), self.worlds.qvel.copy()

    def close(self) -> None:
        self.worlds.close()
