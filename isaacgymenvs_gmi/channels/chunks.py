"""What travels from an actor to the trainers: a chunk of T steps of an actor's N envs, one
tensor per channel kind (the paper's dispenser splits a rollout this way)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

# Every kind a trainer needs to rebuild the PPO batch and correct for policy lag.
CHANNEL_KINDS = (
    "obs",  # (T, N, num_obs)
    "states",  # (T, N, num_states) for a central value net; (T, N, 0) without one
    "actions",  # (T, N, num_actions)
    "neglogp",  # (T, N) -log mu(a_t|x_t) under the behaviour policy
    "mu",  # (T, N, num_actions) behaviour policy mean
    "sigma",  # (T, N, num_actions) behaviour policy standard deviation
    "values",  # (T, N) behaviour critic's V(x_t)
    "final_values",  # (T, N) V of the final observation where an episode ended at t
    "rewards",  # (T, N)
    "terminated",  # (T, N) bool
    "truncated",  # (T, N) bool
    "version",  # (T, N) int64, the policy version that chose a_t
)


@dataclass(frozen=True)
class Chunk:
    """One channel's share of an actor's chunk.

    Attributes:
        actor: the producing actor GMI.
        seq: the chunk's number in that actor's stream (0, 1, 2, ...).
        kind: one of :data:`CHANNEL_KINDS`.
        data: (T, N, ...) tensor.
    """

    actor: int
    seq: int
    kind: str
    data: torch.Tensor


def dispense(actor: int, seq: int, rollout: Mapping[str, torch.Tensor]) -> list[Chunk]:
    """Split one rollout chunk into a :class:`Chunk` per kind, in :data:`CHANNEL_KINDS` order.

    Raises ValueError when a kind is missing or the tensors disagree on (T, N)."""
    missing = [k for k in CHANNEL_KINDS if k not in rollout]
    if missing:
        raise ValueError(f"rollout chunk lacks {missing}")
    steps = tuple(rollout["rewards"].shape[:2])
    wrong = {
        k: tuple(rollout[k].shape) for k in CHANNEL_KINDS if tuple(rollout[k].shape[:2]) != steps
    }
    if wrong:
        raise ValueError(f"channels disagree on (T, N) = {steps}: {wrong}")
    return [Chunk(actor, seq, kind, rollout[kind]) for kind in CHANNEL_KINDS]
