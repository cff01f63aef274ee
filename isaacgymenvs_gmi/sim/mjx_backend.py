"""MuJoCo XLA (MJX) for all worlds of a GMI: physics substeps, task observations, rewards and
resets fused into one jitted JAX function per env step, resident on the JAX device."""

from __future__ import annotations

import copy
import functools
import logging
from collections import deque
from typing import Literal

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from isaacgymenvs_gmi.tasks.base import PhysicsFrame

from .backend import PhysicsBackend
from .mjx_import import import_mjx
from .step_logic import EnvBuffers, StepLogic
from .stored_programs import stored_jit
from .world_params import WorldUpdate

log = logging.getLogger(__name__)


class MjxBackend(PhysicsBackend):
    """Task + episode logic over batched ``mjx.Data`` (implements the backend protocol)."""

    name = "mjx"

    def __init__(
        self,
        logic: StepLogic,
        model: mujoco.MjModel,
        nstep: int,
        seed: int,
        impl: Literal["jax", "warp"] = "jax",
        device: jax.Device | None = None,
        world: WorldUpdate | None = None,
        logic_key: bytes | None = None,
    ):
        """``logic_key``: bytes naming all ``logic`` was built from (the task config); with it,
        the programs are stored (:mod:`.stored_programs`)."""
        mjx = import_mjx()
        self.logic = logic
        self.device = device or jax.devices()[0]
        device_model = _for_device(model, self.device)
        self._mx = mjx.put_model(device_model, impl=impl, device=self.device)
        n = logic.num_envs
        key = None
        if logic_key is not None:
            key = b"|".join((logic_key, _model_bytes(device_model), f"{impl} {nstep} {n}".encode()))
        tasks = tuple(dict.fromkeys(c.__module__ for c in type(logic.task).__mro__[:-1]))
        jit = functools.partial(stored_jit, key=key, code_of=tasks, platform=self.device.platform)

        def blank_worlds():
            return jax.vmap(lambda _: mjx.make_data(self._mx, impl=impl))(jnp.arange(n))

        with jax.default_device(self.device):
            self._data = jit(blank_worlds, name="mjx_blank_worlds")()
        self._seed = seed
        # pools used up per the last two steps (read one step late), and pools refilled
        self._switches: deque[jax.Array] = deque(maxlen=2)
        self._refilled = 0
        mx = self._mx
        # numpy constants: device arrays would each cost a small program at every start
        index = np.asarray(logic.ctrl_index)
        scale = np.asarray(logic.ctrl_scale, np.float32)
        offset = np.asarray(logic.ctrl_offset, np.float32)
        act_index = np.asarray(logic.task.info.act_qpos_index)  # intvelocity targets

        def load(data, mask, qpos, qvel):
            return _load(data, mask, qpos, qvel, act_index)

        # randomised per-world model fields (N, ...) and gravity (3,): step arguments
        self._world: dict[str, jax.Array] = {}
        self._gravity: jax.Array | None = None
        if world is not None:
            self._world = {k: self._put(v) for k, v in world.fields.items()}
            self._gravity = None if world.gravity is None else self._put(world.gravity)

        def world_step(fields, gravity, d):
            m = mx.replace(**fields) if fields else mx
            if gravity is not None:
                m = m.replace(opt=m.opt.replace(gravity=gravity))
            return mjx.step(m, d)

        batched_step = jax.vmap(world_step, in_axes=(0, None, 0))

        def fused_step(data, bufs: EnvBuffers, actions: jax.Array, fields, gravity):
            bufs = bufs._replace(pool=logic.turn_if_low(bufs.pool))
            clipped = logic.clip(actions)
            data = data.replace(ctrl=clipped[:, index] * scale + offset)
            data = jax.lax.fori_loop(0, nstep, lambda _, d: batched_step(fields, gravity, d), data)
            frame = PhysicsFrame(data.qpos, data.qvel, data.sensordata)
            out, bufs, reset = logic.finish_step(frame, clipped, bufs)
            data = load(data, out.reset, reset.qpos, reset.qvel)
            # the pools used up so far, apart from the donated buffers: the host reads it later
            return data, bufs, logic.pack(out), bufs.pool.switches + 0

        def start(data, key):
            bufs, reset, obs = logic.start(key)
            everyone = jnp.ones((n,), bool)
            return load(data, everyone, reset.qpos, reset.qvel), logic.ring(bufs), obs

        # out_like: the outputs' structure without tracing (the step's takes seconds)
        step_like, same = (lambda data, bufs, *_: (data, bufs, 0, 0)), (lambda x, *_: x)
        self._fused_step = jit(
            fused_step, name="mjx_step", donate_argnums=(0, 1), out_like=step_like
        )
        self._refill = jit(logic.refill, name="mjx_refill", donate_argnums=(0,), out_like=same)
        self._start = jit(start, name="mjx_start", donate_argnums=(0,))
        self._load = jit(load, name="mjx_load", donate_argnums=(0,), out_like=same)

    def reset(self) -> jax.Array:
        key = jax.device_put(jax.random.PRNGKey(self._seed), self.device)
        self._data, self._bufs, obs = self._start(self._data, key)
        self._switches.clear()
        self._refilled = 0
        return obs

    def step(self, actions) -> jax.Array:
        """One env step for actions (N, A) (JAX, numpy or DLPack-able); nothing waits for the
        device. The step turns to the next pool itself, by the MuJoCo backend's rule (same
        episodes per seed); the pool left is refilled when the host reads that, a step late."""
        actions = jnp.asarray(actions) if isinstance(actions, np.ndarray) else actions
        if len(self._switches) == self._switches.maxlen:
            used_up = int(jax.device_get(self._switches[0]))  # two steps back: done by now
            if used_up > self._refilled:
                self._bufs = self._refill(self._bufs)
                self._refilled = used_up
        self._data, self._bufs, out, switches = self._fused_step(
            self._data, self._bufs, actions, self._world, self._gravity
        )
        switches.copy_to_host_async()
        self._switches.append(switches)
        return out

    def refill_pool(self) -> None:
        """Sample the next pool now, into the half of the ring not in use."""
        self._bufs = self._refill(self._bufs)

    def apply_world(self, update: WorldUpdate) -> None:
        rows = jnp.asarray(update.rows)
        for name, values in update.fields.items():
            self._world[name] = self._world[name].at[rows].set(self._put(values))
        if update.gravity is not None:
            self._gravity = self._put(update.gravity)

    def _put(self, values: np.ndarray) -> jax.Array:
        return jax.device_put(np.asarray(values, np.float32), self.device)

    def set_physics_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        everyone = jnp.ones((self.logic.num_envs,), bool)
        qpos, qvel = jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32)
        self._data = self._load(self._data, everyone, qpos, qvel)

    def physics_state(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self._data.qpos), np.asarray(self._data.qvel)

    def close(self) -> None:
        self._data = None


def _model_bytes(model: mujoco.MjModel) -> bytes:
    """The model as MuJoCo saves it (MJB): every field."""
    buffer = np.empty(mujoco.mj_sizeModel(model), np.uint8)
    mujoco.mj_saveModel(model, None, buffer)
    return buffer.tobytes()


def _for_device(model: mujoco.MjModel, device: jax.Device) -> mujoco.MjModel:
    """On the CPU, a copy that factors the mass matrix sparsely: MJX's dense batched LAPACK
    Cholesky deadlocks XLA's CPU thread pool (jaxlib 0.10) at a few dozen worlds or more; the
    sparse path is the same physics, as fast. GPUs keep MuJoCo's own choice."""
    if device.platform != "cpu" or model.opt.jacobian == mujoco.mjtJacobian.mjJAC_SPARSE:
        return model
    sparse = copy.copy(model)
    sparse.opt.jacobian = mujoco.mjtJacobian.mjJAC_SPARSE
    return sparse


def _load(data, mask: jax.Array, qpos: jax.Array, qvel: jax.Array, act_index: np.ndarray):
    """Worlds where ``mask`` (N,) is true restart from (qpos (N, nq), qvel (N, nv)) at rest;
    actuator activations (na,) restart at ``qpos[:, act_index]``."""
    m = mask[:, None]
    return data.replace(
        qpos=jnp.where(m, qpos, data.qpos),
        qvel=jnp.where(m, qvel, data.qvel),
        act=jnp.where(m, qpos[:, act_index], data.act) if act_index.size else data.act,
        qacc_warmstart=jnp.where(m, 0.0, data.qacc_warmstart),
        time=jnp.where(mask, 0.0, data.time),
    )
