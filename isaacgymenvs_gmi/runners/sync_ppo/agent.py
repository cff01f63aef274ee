"""rl-games' continuous PPO agent, one per GMI, kept in lockstep with the other GMIs.

It never sets rl-games' ``multi_gpu`` (which calls ``init_process_group("nccl")`` itself): every
cross-GMI exchange goes through the group and the :class:`PpoLockstep` passed in. GMI 0 alone logs
and writes checkpoints; the others keep rl-games' bookkeeping (so epoch-end decisions such as
``max_epochs`` or ``score_to_win`` are computed everywhere from identical, synchronised values)
but their side effects are switched off. Stop decisions are made by every GMI from identical
values (epoch and frame counts, merged episode statistics), so they agree.
"""

from __future__ import annotations

from rl_games.algos_torch import torch_ext

from isaacgymenvs_gmi.gmi.faults import EpochHook, no_fault
from isaacgymenvs_gmi.gmi.group import GmiGroup
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.gmi.stop import StopCheck, never_stop
from isaacgymenvs_gmi.patches.central_value_reduction import reduce_critic_gradients
from isaacgymenvs_gmi.patches.synced_advantages import covered, synced_prepare_dataset
from isaacgymenvs_gmi.patches.synced_normalizers import sync_normalizers

from .lockstep import PpoLockstep
from .stopping import StoppableAgent

CHECK_EVERY = 10  # epochs between replica fingerprint checks


class SyncedScheduler:
    """Wraps an rl-games LR scheduler so every GMI decides from the KL averaged over all GMIs."""

    def __init__(self, inner, group: GmiGroup):
        self.inner, self.group = inner, group

    def update(self, current_lr, entropy_coef, epoch, frames, kl_dist=None, **kwargs):
        if kl_dist is not None:
            kl_dist = self.group.mean_scalar("kl", float(kl_dist))
            return self.inner.update(current_lr, entropy_coef, epoch, frames, kl_dist, **kwargs)
        return self.inner.update(current_lr, entropy_coef, epoch, frames, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class GmiPpoAgent(StoppableAgent):
    """``a2c_continuous`` with gradient reduction, weight broadcast and synchronised statistics,
    for the actor-critic model and, when configured, the central value (asymmetric critic) net.

    Its frame count (``self.frame``: checkpoints, ``max_frames``, summaries) is the run's total
    over all GMIs, so it stays right when a run resumes with another number of GMIs.
    """

    def __init__(
        self,
        base_name,
        params,
        *,
        lockstep: PpoLockstep,
        before_epoch: EpochHook = no_fault,
        should_stop: StopCheck = never_stop,
    ):
        super().__init__(base_name, params, should_stop=should_stop)
        self.lockstep, self.before_epoch = lockstep, before_epoch
        group = self.group = lockstep.group
        self.scheduler = SyncedScheduler(self.scheduler, group)
        swapped = sync_normalizers(
            self, lambda moments: group.all_gather_vector(moments, "normaliser statistics")
        )
        if self.has_central_value:
            reduce_critic_gradients(self.central_value_net, lockstep.average_gradients)
        # each GMI tracks its share of games_to_track episodes, so the merged statistics cover
        # the union's last games_to_track episodes, as one process's would (not W times more)
        per_gmi = max(1, self.games_to_track // group.world_size)
        for name, size in (
            ("game_rewards", self.value_size),
            ("game_shaped_rewards", self.value_size),
            ("game_lengths", 1),
        ):
            setattr(self, name, torch_ext.AverageMeter(size, per_gmi).to(self.ppo_device))
        if covered(self):
            swapped.append("advantages")
        if group.rank == 0 and swapped:
            say(f"normaliser statistics synchronised across GMIs: {', '.join(swapped)}")
        worlds = getattr(getattr(self.vec_env.env, "backend", None), "worlds", None)
        group.check_pools(mujoco=getattr(worlds, "num_threads", None))
        group.startup_barrier("agent built")
        group.broadcast_module(self.model, "initial weights")
        if self.has_central_value:
            group.broadcast_module(self.central_value_net, "initial critic weights")
        group.check_same(self.replicas(), "initial weights")

    def replicas(self) -> list:
        """The modules every GMI must hold identically."""
        return [self.model, *([self.central_value_net] if self.has_central_value else [])]

    def prepare_dataset(self, batch_dict):
        synced_prepare_dataset(
            self,
            batch_dict,
            super().prepare_dataset,
            lambda moments: self.group.all_gather_vector(moments, "advantage statistics"),
        )

    def trancate_gradients_and_step(self):
        self.lockstep.average_gradients(self.model.parameters())
        return super().trancate_gradients_and_step()

    def train(self):
        result = super().train()
        self.group.check_same(self.replicas(), f"end of training, {self.epoch_num} epochs")
        return result

    def train_epoch(self):
        self.before_epoch(self.epoch_num + 1)
        if self.epoch_num % CHECK_EVERY == 0:  # before the first update, then periodically
            self.group.check_same(self.replicas(), f"after {self.epoch_num} epochs")
        result = super().train_epoch()  # includes the (collective) stop check
        self.curr_frames *= self.group.world_size  # every GMI played as many frames as this one
        per_value = (1, self.value_size)  # rl-games' reward meters hold (1, value_size) means
        self.lockstep.merge_meter(self.game_rewards, per_value)
        self.lockstep.merge_meter(self.game_shaped_rewards, per_value)
        self.lockstep.merge_meter(self.game_lengths, (1,))
        meter = self.game_rewards
        self.lockstep.telemetry.record(
            epoch=self.epoch_num,
            max_epochs=self.max_epochs,
            epoch_seconds=float(result[3]),  # rl-games: step, play, update, total times
            reward=float(meter.get_mean().reshape(-1)[0]) if meter.current_size else None,
            writer=getattr(self, "writer", None),
        )
        return result

    def save(self, fn):
        if self.group.rank == 0:
            super().save(fn)
