"""rl-games' continuous PPO agent, one per GMI, kept in lockstep with the other GMIs.

It never sets rl-games' ``multi_gpu`` (which calls ``init_process_group("nccl")`` itself): every
cross-GMI exchange goes through the collectives of :class:`GmiSync`, passed in. GMI 0 alone logs
and writes checkpoints; the others keep rl-games' bookkeeping (so epoch-end decisions such as
``max_epochs`` or ``score_to_win`` are computed everywhere from identical, synchronised values)
but their side effects are switched off. Stop decisions are made by every GMI from identical
values (epoch and frame counts, merged episode statistics), so they agree.
"""

from __future__ import annotations

import logging

from rl_games.algos_torch.a2c_continuous import A2CAgent

from isaacgymenvs_gmi.gmi.sync import GmiSync
from isaacgymenvs_gmi.gmi.worker import inject_fault

log = logging.getLogger(__name__)
CHECK_EVERY = 10  # epochs between replica fingerprint checks


class SyncedScheduler:
    """Wraps an rl-games LR scheduler so every GMI decides from the KL averaged over all GMIs."""

    def __init__(self, inner, sync: GmiSync):
        self.inner, self.sync = inner, sync

    def update(self, current_lr, entropy_coef, epoch, frames, kl_dist=None, **kwargs):
        if kl_dist is not None:
            kl_dist = self.sync.mean_scalar("kl", float(kl_dist))
            return self.inner.update(current_lr, entropy_coef, epoch, frames, kl_dist, **kwargs)
        return self.inner.update(current_lr, entropy_coef, epoch, frames, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class GmiPpoAgent(A2CAgent):
    """``a2c_continuous`` with gradient averaging, weight broadcast and synchronised statistics."""

    def __init__(self, base_name, params, *, sync: GmiSync):
        super().__init__(base_name, params)
        self.sync = sync
        self.scheduler = SyncedScheduler(self.scheduler, sync)
        worlds = getattr(getattr(self.vec_env.env, "backend", None), "worlds", None)
        sync.check_pools(mujoco=getattr(worlds, "num_threads", None))
        sync.startup_barrier("agent built")
        sync.broadcast_module(self.model, "initial weights")
        if self.has_central_value:
            sync.broadcast_module(self.central_value_net, "initial critic weights")
        sync.check_same(self.model, "initial weights")

    def trancate_gradients_and_step(self):
        self.sync.average_gradients(self.model.parameters())
        return super().trancate_gradients_and_step()

    def train_epoch(self):
        inject_fault(self.sync.rank, self.epoch_num + 1)
        if self.epoch_num % CHECK_EVERY == 0:  # before the first update, then periodically
            self.sync.check_same(self.model, f"weights before epoch {self.epoch_num + 1}")
        result = super().train_epoch()
        per_value = (1, self.value_size)  # rl-games' reward meters hold (1, value_size) means
        self.sync.merge_meter(self.game_rewards, per_value)
        self.sync.merge_meter(self.game_shaped_rewards, per_value)
        self.sync.merge_meter(self.game_lengths, (1,))
        self.sync.after_epoch(self, result)
        return result

    def save(self, fn):
        if self.sync.rank == 0:
            super().save(fn)
