"""What every physics backend offers the VecTask, and the episode state they all keep."""

from __future__ import annotations

import jax
import numpy as np

from .step_logic import EnvBuffers, StepLogic


class PhysicsBackend:
    """Base of the backends: N worlds of one task, stepped with the shared :class:`StepLogic`.

    Subclasses implement ``reset() -> obs (N, num_obs)``, ``step(actions (N, A))`` (returning
    ``StepLogic.pack``-ed outputs on the simulation device, or a numpy ``StepOutput`` for a host
    backend), ``set_physics_state(qpos, qvel)``, ``physics_state()`` and ``close()``, and keep
    the episode buffers in ``self._bufs`` (or override :attr:`totals` and :attr:`progress`).
    """

    name: str
    logic: StepLogic
    _bufs: EnvBuffers | None = None

    @property
    def totals(self) -> jax.Array | np.ndarray:
        """(3,) summed return and length of the episodes finished so far, and their count."""
        return self._bufs.totals

    @property
    def progress(self) -> jax.Array | np.ndarray:
        """(N,) steps taken in each env's current episode."""
        return self._bufs.progress
