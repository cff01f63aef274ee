"""What every physics backend offers the VecTask, and the episode state they all keep."""

from __future__ import annotations

import abc

import jax
import numpy as np

from .step_logic import EnvBuffers, StepLogic, StepOutput
from .world_params import WorldUpdate


class PhysicsBackend(abc.ABC):
    """N worlds of one task, stepped with the shared :class:`StepLogic`.

    Subclasses keep the episode buffers in ``self._bufs`` (or override :attr:`totals` and
    :attr:`progress`). A = actions per env, O = observations per env, Q/V = qpos/qvel sizes.
    """

    name: str
    logic: StepLogic
    _bufs: EnvBuffers | None = None

    @abc.abstractmethod
    def reset(self) -> jax.Array | np.ndarray:
        """Start every world's first episode; returns the first observations (N, O)."""

    @abc.abstractmethod
    def step(self, actions: jax.Array | np.ndarray) -> jax.Array | StepOutput:
        """One env step of every world with ``actions`` (N, A), finished worlds reset in place.

        Returns the ``StepLogic.pack``-ed outputs (N, O + 5) on the simulation device, or for a
        host backend a ``StepOutput`` of numpy arrays."""

    @abc.abstractmethod
    def set_physics_state(self, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Overwrite every world's state with ``qpos`` (N, Q) and ``qvel`` (N, V)."""

    @abc.abstractmethod
    def physics_state(self) -> tuple[np.ndarray, np.ndarray]:
        """Every world's (qpos (N, Q), qvel (N, V)), as host arrays."""

    @abc.abstractmethod
    def apply_world(self, update: WorldUpdate) -> None:
        """Domain randomisation: new model fields for worlds ``update.rows`` and, when given,
        new gravity for all; they take effect from the next step."""

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
