"""The task seam: IsaacGymEnvs task rules written once, in JAX, over any physics backend.

A task never touches a simulator. A backend hands it a :class:`PhysicsFrame` (batched MuJoCo
state after a control step) and the task returns observations, rewards and terminations as pure
JAX functions, so the same code runs after MuJoCo's C engine and inside MJX's fused step.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, NamedTuple

import jax
import mujoco
import numpy as np

from .kinematics import KinematicTree

ASSETS_DIR = Path(__file__).resolve().parent / "assets"


class PhysicsFrame(NamedTuple):
    """Batched physics state seen by a task.

    qpos: (N, nq), qvel: (N, nv), sensordata: (N, nsensordata); float32 JAX arrays.
    MuJoCo conventions: a free joint stores position then quaternion (w, x, y, z) in qpos, and
    world-frame linear velocity then body-frame angular velocity in qvel.
    """

    qpos: jax.Array
    qvel: jax.Array
    sensordata: jax.Array


@dataclass(frozen=True)
class ModelInfo:
    """Static facts of a compiled model that task logic needs (numpy, host side)."""

    nq: int
    nv: int
    nu: int
    nsensordata: int
    joint_range: np.ndarray  # (njnt, 2) limits of every joint, in model order
    joint_limited: np.ndarray  # (njnt,) bool
    qpos0: np.ndarray  # (nq,) reference configuration
    actuator_action: np.ndarray  # (nu,) index of the action that drives each actuator
    actuator_gear: np.ndarray  # (nu,) first gear component of every actuator, in file order
    act_qpos_index: np.ndarray  # (na,) qpos address of the joint of every stateful actuator
    sensors: dict[str, slice]  # sensor name -> its columns in sensordata
    tree: KinematicTree  # body tree, for frames computed from qpos

    def sensor(self, sensordata: jax.Array, name: str) -> jax.Array:
        """Columns of sensor ``name`` in ``sensordata`` (N, nsensordata) -> (N, dim)."""
        return sensordata[:, self.sensors[name]]

    @classmethod
    def from_model(cls, model: mujoco.MjModel) -> ModelInfo:
        return cls(
            nq=model.nq,
            nv=model.nv,
            nu=model.nu,
            nsensordata=model.nsensordata,
            joint_range=np.array(model.jnt_range, dtype=np.float64),
            joint_limited=np.array(model.jnt_limited, dtype=bool),
            qpos0=np.array(model.qpos0, dtype=np.float64),
            actuator_action=actuator_action_index(model),
            actuator_gear=np.array(model.actuator_gear[:, 0], dtype=np.float64),
            act_qpos_index=stateful_actuator_qpos(model),
            sensors=sensor_slices(model),
            tree=KinematicTree.from_model(model),
        )


def sensor_slices(model: mujoco.MjModel) -> dict[str, slice]:
    """Named sensors -> their columns in ``sensordata`` (unnamed sensors are left out)."""
    out = {}
    for i in range(model.nsensor):
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SENSOR, i)
        if name:
            adr = int(model.sensor_adr[i])
            out[name] = slice(adr, adr + int(model.sensor_dim[i]))
    return out


def stateful_actuator_qpos(model: mujoco.MjModel) -> np.ndarray:
    """(na,) qpos address of the joint behind each actuator activation.

    The only stateful actuator we support is an integrating one on a joint (MJCF
    ``intvelocity``): its activation is a position target, and a fresh episode starts with the
    target at the joint's reset position. Anything else is refused when the model loads.
    """
    index = np.zeros(model.na, dtype=np.int64)
    for k in range(model.nu):
        adr, num = int(model.actuator_actadr[k]), int(model.actuator_actnum[k])
        if num == 0:
            continue
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_ACTUATOR, k) or f"#{k}"
        integrator = model.actuator_dyntype[k] == mujoco.mjtDyn.mjDYN_INTEGRATOR
        on_joint = model.actuator_trntype[k] == mujoco.mjtTrn.mjTRN_JOINT
        if not (integrator and on_joint and num == 1):
            raise ValueError(
                f"actuator {name!r}: stateful actuators must integrate on a joint (intvelocity)"
            )
        index[adr] = model.jnt_qposadr[model.actuator_trnid[k, 0]]
    return index


def actuator_action_index(model: mujoco.MjModel) -> np.ndarray:
    """(nu,) action index per actuator: actions follow dof order, as Isaac Gym applies them.

    A file may list its motors in any order (IsaacGymEnvs' nv_ant.xml starts with hip_4); action i
    always drives the i-th actuated joint in tree order.
    """
    joint_ids = np.asarray(model.actuator_trnid[:, 0])
    on_joints = np.asarray(model.actuator_trntype) == mujoco.mjtTrn.mjTRN_JOINT
    if model.nu == 0 or not on_joints.all():
        return np.arange(model.nu)
    return np.argsort(np.argsort(joint_ids, kind="stable"), kind="stable")


class TaskConfigError(ValueError):
    """A task setting (``task.env.<key>``) this task cannot honour."""

    def __init__(self, key: str, value: object, constraint: str) -> None:
        self.key, self.value, self.constraint = key, value, constraint
        super().__init__(f"task.env.{key}={value!r}: {constraint}")


class TaskLogic(abc.ABC):
    """Observation, reward and reset rules of one task (IsaacGymEnvs semantics).

    Subclasses set the class attributes and implement the abstract methods (``action_scale``,
    ``sample_reset``, ``observe``, ``reward_and_termination``) as pure JAX functions of their
    arguments (no Python side effects: they are traced under ``jax.jit``); everything else has
    a working default. ``carry`` is a task-specific pytree of per-env buffers (e.g. Ant's
    potentials); a task without any keeps the default ``()``.

    Fresh episodes are made ahead, in a pool of P = 4 * num_envs at a time (when the envs start,
    and again whenever fewer than num_envs unused ones are left): ``sample_reset(key, P)``, then
    ``reset_carry(initial_carry(P), frame, key)`` and ``observe(frame, zero actions (P, A),
    carry)`` on ``frame`` = the sampled (qpos, qvel) with ``sensordata`` all zeros (P, nsensordata)
    (MuJoCo has not run on these states yet). An env whose episode ends takes the next unused
    entry: that state is loaded into its world, and that observation and carry are its first.
    So the batch size these methods see is their argument or the leading dim of their inputs
    (P or num_envs), never ``env_cfg['numEnvs']``, and a first observation reads zero sensors.
    """

    name: ClassVar[str]
    num_obs: ClassVar[int]
    num_actions: ClassVar[int]
    num_states: ClassVar[int] = 0
    asset_file: ClassVar[str]  # file name under ASSETS_DIR, or an absolute path (own model)
    default_episode_length: ClassVar[int]
    # False when observe reads nothing from earlier steps: its carry then only hands this
    # step's geometry to the reward, and episodes keep none (no per-env buffers, no pooling)
    keeps_carry: ClassVar[bool] = True
    # IsaacGymEnvs' actor names (domain randomisation's ``actor_params``) -> root bodies of
    # each actor in the model; None: every body attached to the world is an actor of its name
    actors: ClassVar[dict[str, tuple[str, ...]] | None] = None

    def __init__(self, env_cfg: dict[str, Any], sim_dt: float, info: ModelInfo):
        self.env_cfg = env_cfg
        self.sim_dt = sim_dt
        self.info = info
        self.max_episode_length = int(env_cfg.get("episodeLength", self.default_episode_length))

    @property
    def timeout_steps(self) -> int:
        """Steps after which an episode times out: the one episode rule of every task.

        IsaacGymEnvs counts ``progress_buf`` after each step and ends an episode when
        ``progress_buf >= max_episode_length - 1``, so an episode lasts
        ``max_episode_length - 1`` steps (at least one here)."""
        return max(self.max_episode_length - 1, 1)

    @classmethod
    def check_config(cls, env_cfg: dict[str, Any]) -> None:
        """Raise :class:`TaskConfigError` for ``task.env`` settings this task cannot honour.

        Called when a run is planned, before any process or model is built."""
        del env_cfg  # the default task accepts any settings

    @classmethod
    def observation_size(cls, env_cfg: dict[str, Any]) -> int:
        """Observation width (``num_obs``) of this task under ``task.env`` = ``env_cfg``.

        Known without building a model, so a checkpoint can be checked against it when a run is
        planned; a task whose observations follow its settings overrides this."""
        del env_cfg  # the default width is the class attribute
        return cls.num_obs

    @classmethod
    def prepare_spec(cls, spec: mujoco.MjSpec, env_cfg: dict[str, Any]) -> None:
        """Optional: edit a loaded MJCF/URDF spec (sensors, actuators, collision filters)."""
        del spec, env_cfg  # the default model needs no edits

    @abc.abstractmethod
    def action_scale(self) -> np.ndarray:
        """(num_actions,) factors mapping clipped actions to MuJoCo ``ctrl`` (dof order)."""

    def action_offset(self) -> np.ndarray:
        """(num_actions,) ``ctrl = action * action_scale + action_offset`` (dof order).

        Zero for torque control; a position-target task puts its default pose here."""
        return np.zeros(self.num_actions)

    def initial_carry(self, num_envs: int) -> Any:
        """Optional: per-env task buffers (a pytree, leading dim ``num_envs``) before
        :meth:`reset_carry`; by default ``()``, no buffers."""
        del num_envs
        return ()

    @abc.abstractmethod
    def sample_reset(self, key: jax.Array, num_envs: int) -> tuple[jax.Array, jax.Array]:
        """Randomised initial (qpos (num_envs, nq), qvel (num_envs, nv)); ``num_envs`` is the
        reset pool's size (4 x the envs), not ``numEnvs``."""

    def reset_carry(self, carry: Any, frame: PhysicsFrame, key: jax.Array) -> Any:
        """Optional: task buffers for episodes that start in ``frame`` (sampled states, zero
        ``sensordata``), from ``carry`` = ``initial_carry`` of the same size; ``key`` (one PRNG
        key, independent of the one that sampled the states) for the task's own draws, such as
        commands or goals. By default ``carry`` unchanged."""
        del frame, key
        return carry

    @abc.abstractmethod
    def observe(self, frame: PhysicsFrame, actions: jax.Array, carry: Any) -> tuple[jax.Array, Any]:
        """Observations (N, num_obs) of ``frame`` and the updated carry.

        actions: (N, num_actions) clipped actions applied in the step that led to ``frame``;
        zeros for an episode's first observation, made in the reset pool (zero sensordata).
        """

    @abc.abstractmethod
    def reward_and_termination(
        self, obs: jax.Array, actions: jax.Array, carry: Any
    ) -> tuple[jax.Array, jax.Array]:
        """Reward (N,) float32 and termination (N,) bool from unclipped observations."""
