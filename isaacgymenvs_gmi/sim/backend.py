"""What every physics backend offers the VecTask, and the episode state they all keep."""

from __future__ import annotations

import abc

import jax
import numpy as np

from .step_logic import EnvBuffers, StepLogic, StepOutput
from .world_params import WorldUpdate


class PhysicsBackend(abc.ABC):
    """N worlds of one task, stepped with the shared :class:`StepLogic`; episode buffers in
    ``self._bufs`` (or override :attr:`totals` and :attr:`progress`). A/O/Q/V: actions,
    observations, qpos and qvel sizes per env."""

    name: str
    logic: StepLogic
    _bufs: EnvBuffers | None = None

    @abc.abstractmethod
    def reset(self) -> jax.Array | np.ndarray:
        """Start every world's first episode; returns the first observations (N, O)."""

    @abc.abstractmethod
    def step(self, actions: jax.Array | np.ndarray) -> jax.Array | StepOutput:
        """One env step with ``actions`` (N, A), finished worlds reset in place; returns the
        ``StepLogic.pack``-ed (N, O + 5) on the device, or a host backend's numpy StepOutput."""

    @abc.abstractmethod
    def set_physics_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Overwrite every world's state with ``qpos`` (N, Q) and ``qvel`` (N, V)."""

    @abc.abstractmethod
    def physics_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Every world's (qpos (N, Q), qvel (N, V)), as host arrays."""

    @abc.abstractmethod
    def apply_world(self, update: WorldUpdate) -> None:
        """New model fields for worlds ``update.rows`` (and gravity), from the next step on."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release threads and device memory."""

    @abc.abstractmethod
    def refill_pool(self) -> None:
        """Sample a new pool of fresh episodes now (the step does when fewer than N are left)."""

    @property
    def totals(self) -> jax.Array | np.ndarray:
        """(3,) summed return and length of the episodes finished so far, and their count."""
        return self._bufs.totals

    @property
    def progress(self) -> jax.Array | np.ndarray:
        """(N,) steps taken in each env's current episode."""
        return self._bufs.progress
