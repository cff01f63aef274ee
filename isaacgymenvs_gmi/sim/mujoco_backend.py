"""MuJoCo's C engine for all worlds of a GMI: batched, multithreaded, no Python loop per world.

Physics runs in float64 through ``mujoco.rollout`` (a C++ thread pool over the worlds); the task
logic runs as one jitted JAX function per env step on the host.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import rollout

from isaacgymenvs_gmi.tasks.base import PhysicsFrame, stateful_actuator_qpos

from .backend import PhysicsBackend
from .step_logic import StepLogic

FULL_PHYSICS = mujoco.mjtState.mjSTATE_FULLPHYSICS


class WorldBatch:
    """N MuJoCo worlds of one model, stepped together.

    ``state`` (N, nstate) holds MuJoCo's full physics state of every world (time, qpos, qvel,
    act, ...); :meth:`step` integrates ``nstep`` steps with the given controls.
    """

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

    def load(self, mask: np.ndarray, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set qpos/qvel (rows of (N, nq)/(N, nv)) of the worlds where ``mask`` (N,) is true.

        Actuator activations (intvelocity position targets) restart at their joints' new
        positions, ``qpos[:, act_qpos_index]``."""
        rows = np.flatnonzero(mask)
        if rows.size:
            self.state[rows, self.qpos_slice] = qpos[rows]
            self.state[rows, self.qvel_slice] = qvel[rows]
            if self.act_qpos_index.size:
                self.state[rows, self.act_slice] = qpos[rows][:, self.act_qpos_index]
            self.state[rows, 0] = 0.0

    def close(self) -> None:
        self._rollout.close()


class MujocoBackend(PhysicsBackend):
    """Task + episode logic over a :class:`WorldBatch` (implements the backend protocol)."""

    name = "mujoco"

    def __init__(
        self, logic: StepLogic, model: mujoco.MjModel, nstep: int, num_threads: int, seed: int
    ):
        self.logic = logic
        self.worlds = WorldBatch(model, logic.num_envs, nstep, num_threads)
        self._ctrl_offset = logic.ctrl_offset if logic.ctrl_offset.any() else None
        # One float32 host buffer [qpos | qvel | sensordata | actions] per step: one copy to JAX.
        nq, nv, ns = model.nq, model.nv, model.nsensordata
        width = nq + nv + ns + logic.task.num_actions
        self._host = np.empty((logic.num_envs, width), np.float32)
        self._cuts = (nq, nq + nv, nq + nv + ns)

        def finish_packed(host, bufs):
            qpos, qvel, sensors, actions = jnp.split(host, self._cuts, axis=1)
            frame = PhysicsFrame(qpos, qvel, sensors)
            out, bufs, reset = logic.finish_step(frame, actions, bufs)
            # reset states ride along in the same array: one host view serves every read below
            return jnp.concatenate([logic.pack(out), reset.qpos, reset.qvel], axis=1), bufs

        self._finish = jax.jit(finish_packed, donate_argnums=(1,))
        self._refill = jax.jit(logic.refill, donate_argnums=(0,))
        self._pool_left = 0  # fresh episodes left in the pool (counted on the host)
        self._ctrl_identity = bool((logic.ctrl_index == np.arange(len(logic.ctrl_index))).all())
        self._start = jax.jit(logic.start)
        self._seed = seed
        self._bufs = None

    def reset(self) -> jax.Array:
        """Start every env afresh; returns the first observations (N, num_obs)."""
        self._bufs, state, obs = self._start(jax.random.PRNGKey(self._seed))
        self._pool_left = self.logic.pool_size - self.logic.num_envs
        everyone = np.ones(self.logic.num_envs, dtype=bool)
        self.worlds.load(everyone, np.asarray(state.qpos), np.asarray(state.qvel))
        return obs

    def step(self, actions: np.ndarray) -> np.ndarray:
        """One env step for actions (N, num_actions), unclipped; returns ``StepLogic.pack``-ed
        outputs, then the reset states (N, num_obs + 5 + nq + nv), as a read-only host view of
        JAX's result buffer (DLPack-exportable, zero-copy). Few, in-place host operations: this
        is the hot path."""
        logic, w, host = self.logic, self.worlds, self._host
        if self._pool_left < logic.num_envs:
            self._bufs, self._pool_left = self._refill(self._bufs), logic.pool_size
        _, b, c = self._cuts
        clipped = host[:, c:]
        np.clip(actions, -logic.clip_actions, logic.clip_actions, out=clipped)
        ctrl = clipped if self._ctrl_identity else clipped[:, logic.ctrl_index]
        w.step(ctrl, logic.ctrl_scale, self._ctrl_offset)
        host[:, :b], host[:, b:c] = w.qpos_qvel, w.sensordata
        packed, self._bufs = self._finish(host, self._bufs)  # numpy in: no Python-side staging
        view = np.asarray(packed)  # zero-copy host view
        done = view[:, logic.col_reset] > 0.5
        if done.any():
            self._pool_left -= int(done.sum())
            start = logic.col_length + 1
            nq, nv = w.model.nq, w.model.nv
            w.load(done, view[:, start : start + nq], view[:, start + nq : start + nq + nv])
        return view

    def set_physics_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Load qpos (N, nq) and qvel (N, nv) into every world (tests, tools)."""
        self.worlds.load(np.ones(self.logic.num_envs, dtype=bool), qpos, qvel)

    def physics_state(self) -> tuple[np.ndarray, np.ndarray]:
        return self.worlds.qpos.copy(), self.worlds.qvel.copy()

    def close(self) -> None:
        self.worlds.close()
