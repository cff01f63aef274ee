"""rl-games patch: advantages normalised over the union batch of all GMIs.

rl-games' ``normalize_advantage`` standardises each rollout's advantages with that rollout's own
mean and standard deviation. With one replica per GMI each GMI would use its own shard's
moments (rl-games' multi-GPU mode does), so a GMI whose envs happened to do better than the
others' would see its advantages shifted back to zero. Here the per-GMI moments are gathered
and folded (in GMI order, as the normalisers do) into the union's, and every GMI standardises
with those: what one process would do with the concatenated rollout.

Covers rl-games' plain path (feed-forward policies without ``normalize_rms_advantage``); a
recurrent or RMS-normalised policy keeps rl-games' per-GMI behaviour.
"""

from __future__ import annotations

import torch

from .synced_normalizers import Gather, union_moments

EPS = 1e-8  # rl-games' epsilon on the standard deviation


def covered(agent) -> bool:
    """Whether ``agent`` normalises advantages the way this patch replaces."""
    return bool(
        agent.normalize_advantage
        and not agent.is_rnn
        and not getattr(agent, "normalize_rms_advantage", False)
    )


def normalize_over_union(advantages: torch.Tensor, gather: Gather, copies: int = 1) -> None:
    """Standardise ``advantages`` ((N,) this GMI's rollout) in place with the union's mean and
    unbiased standard deviation, as rl-games does for one rollout (``copies``: see
    :func:`~.synced_normalizers.union_moments`)."""
    a = advantages.detach().double().reshape(-1)
    # [count, mean, population variance]: the row union_moments folds
    mine = torch.stack([a.new_tensor(float(a.numel())), a.mean(), a.var(unbiased=False)])
    mean, var, count = union_moments(gather(mine.cpu()), copies)
    std = torch.sqrt(var * count / (count - 1))  # unbiased, as torch.std
    advantages.sub_(mean.to(advantages)).div_(std.to(advantages) + EPS)


def synced_prepare_dataset(agent, batch_dict, prepare, gather: Gather, copies: int = 1) -> None:
    """Run rl-games' ``prepare`` (the agent's own prepare_dataset) with its per-rollout
    advantage normalisation switched off, then normalise the stored advantages over the
    union. The central value dataset holds the same tensor, so it follows."""
    if not covered(agent):
        prepare(batch_dict)
        return
    agent.normalize_advantage = False
    try:
        prepare(batch_dict)
    finally:
        agent.normalize_advantage = True
    normalize_over_union(agent.dataset.values_dict["advantages"], gather, copies)
