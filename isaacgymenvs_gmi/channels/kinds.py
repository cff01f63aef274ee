"""What travels from an actor to the trainers, kind by kind (the paper's Fig. 5a).

Every env step of an actor's N envs yields one row per env of each kind; a kind's per-env shape
and dtype are fixed for a run, so both ends agree on the byte layout without sending it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class KindSpec:
    """One kind of experience: ``(steps, envs, *shape)`` tensors of ``dtype``."""

    name: str
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def row_bytes(self) -> int:
        """Bytes of one env's row at one step."""
        return math.prod(self.shape) * torch.empty((), dtype=self.dtype).element_size()

    def empty(self, steps: int, envs: int, device: torch.device | str = "cpu") -> torch.Tensor:
        return torch.empty((steps, envs, *self.shape), dtype=self.dtype, device=device)


def experience_kinds(num_obs: int, num_states: int, num_actions: int) -> tuple[KindSpec, ...]:
    """Every kind a trainer needs to rebuild the PPO batch and correct for policy lag, in the
    order channels carry them. ``states`` is present only with a central value net."""
    f32 = torch.float32
    kinds = [
        KindSpec("obs", (num_obs,), f32),  # x_t, as the policy saw it (before normalisation)
        KindSpec("states", (num_states,), f32),  # central value net input
        KindSpec("actions", (num_actions,), f32),  # a_t as sampled (before clipping)
        KindSpec("neglogp", (), f32),  # -log mu(a_t | x_t), behaviour policy
        KindSpec("mu", (num_actions,), f32),  # behaviour policy mean
        KindSpec("sigma", (num_actions,), f32),  # behaviour policy standard deviation
        KindSpec("values", (), f32),  # behaviour critic's V(x_t)
        KindSpec("next_values", (), f32),  # behaviour V(x_{t+1}) where the trainer cannot see
        # x_{t+1}: at a truncation V(x_t) (the env resets before returning, as rl-games'
        # value_bootstrap assumes) and at a chunk's last step V(x_T)
        KindSpec("rewards", (), f32),  # r_t, unshaped
        KindSpec("terminated", (), torch.bool),  # the episode ended at t, no future
        KindSpec("truncated", (), torch.bool),  # the episode was cut at t (time limit)
        KindSpec("episode_return", (), f32),  # the ended episode's return where done, else 0
        KindSpec("episode_length", (), f32),  # its length where done, else 0
        KindSpec("version", (), torch.int64),  # policy version that chose a_t
    ]
    return tuple(k for k in kinds if k.name != "states" or num_states > 0)
