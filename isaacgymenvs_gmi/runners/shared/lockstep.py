"""Several rl-games PPO learners kept bit-identical, one per GMI: the exchanges that keep them
so (gradients averaged through the layout's reducer, normaliser and advantage statistics over
the union batch, the adaptive learning rate from the mean KL, episode statistics merged) and the
checks that prove it. Sync PPO's GMIs use it, and so do an async run's trainers."""

from __future__ import annotations

from collections.abc import Iterable

import torch
from rl_games.algos_torch import torch_ext

from isaacgymenvs_gmi.comm import Reducer, build_gradient_reduction
from isaacgymenvs_gmi.comm.buckets import GradientBuckets
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.gmi.group import GmiGroup
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.patches.central_value_reduction import reduce_critic_gradients
from isaacgymenvs_gmi.patches.synced_advantages import covered, synced_prepare_dataset
from isaacgymenvs_gmi.patches.synced_normalizers import sync_normalizers
from isaacgymenvs_gmi.placement.layout import GmiLayout

from .agents import policy_modules


class PpoLockstep:
    """One learner's exchanges with the others of ``group``; ``reducer`` carries the
    gradients."""

    def __init__(self, group: GmiGroup, reducer: Reducer):
        self.group, self.reducer = group, reducer
        self.buckets = GradientBuckets()

    def average_gradients(self, params: Iterable[torch.nn.Parameter]) -> None:
        """Each ``.grad`` becomes its mean over GMIs: flatten into buckets, reduce, unflatten."""
        self.buckets.reduce(params, self._mean)

    def _mean(self, flat: torch.Tensor) -> None:
        self.group.guard(f"gradient {self.reducer.strategy}", lambda: self.reducer.mean(flat))

    def merge_meter(self, meter, shape: tuple[int, ...]) -> None:
        """Make an rl-games AverageMeter hold the mean over all GMIs' tracked episodes.

        ``shape``: the mean's shape as rl-games' own updates leave it (it differs per meter),
        so a GMI that has not finished an episode yet gets the same shape as the others."""
        size = float(meter.current_size)
        packed = torch.cat([meter.mean.reshape(-1).double().cpu() * size, torch.tensor([size])])
        self.group.sum_(packed, "episode statistics")
        total = packed[-1].item()
        if total > 0:
            mean = (packed[:-1] / total).to(meter.mean.dtype).reshape(shape)
            meter.mean = mean.to(meter.mean.device)
        meter.current_size = int(min(total, meter.max_size))

    def merge_episode_meters(self, agent) -> None:
        """rl-games' reward, shaped-reward and length meters of ``agent``, merged."""
        per_value = (1, agent.value_size)  # rl-games' reward meters hold (1, value_size) means
        self.merge_meter(agent.game_rewards, per_value)
        self.merge_meter(agent.game_shaped_rewards, per_value)
        self.merge_meter(agent.game_lengths, (1,))


def build_lockstep(
    ctx: GmiContext, layout: GmiLayout, group: GmiGroup | None
) -> PpoLockstep | None:
    """The lockstep of ``layout``'s GMIs (the run's first ones; all of them in sync PPO) over
    ``group``, their own group, with the run's ``gmi.comm`` and ``gmi.intra_device``.
    Collective over the whole run: GMIs outside ``layout`` (``group`` None) take part in
    creating the groups and get None."""
    plan, everyone = ctx.plan, ctx.group
    reducer = build_gradient_reduction(
        everyone.rank,
        layout,
        comm=plan.gmi.comm,
        intra_device=plan.gmi.intra_device,
        store=everyone.store,
        timeout_s=everyone.timeout_s,
        device=ctx.resources.rl_device,
        backend=plan.gmi_backend,
        report=say if everyone.rank == 0 else None,
    )
    if group is None or reducer is None:
        return None
    return PpoLockstep(group, reducer)


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


class ReplicatedPpo:
    """Mixin for rl-games' continuous PPO agent (list it before the agent class): once
    :meth:`replicate` is called, every update goes through the lockstep, so replicas that start
    identical stay identical. Without it the agent is rl-games' own."""

    lockstep: PpoLockstep | None = None

    def replicate(self, lockstep: PpoLockstep) -> list[str]:
        """Route this agent's exchanges through ``lockstep`` (call once, after rl-games'
        ``__init__``); returns the statistics now synchronised."""
        group, self.lockstep = lockstep.group, lockstep
        self.scheduler = SyncedScheduler(self.scheduler, group)
        swapped = sync_normalizers(
            self, lambda moments: group.all_gather_vector(moments, "normaliser statistics")
        )
        if self.has_central_value:
            reduce_critic_gradients(self.central_value_net, lockstep.average_gradients)
        # each replica tracks its share of games_to_track episodes, so the merged statistics
        # cover the union's last games_to_track episodes, as one process's would
        per_replica = max(1, self.games_to_track // group.world_size)
        for name, size in (
            ("game_rewards", self.value_size),
            ("game_shaped_rewards", self.value_size),
            ("game_lengths", 1),
        ):
            setattr(self, name, torch_ext.AverageMeter(size, per_replica).to(self.ppo_device))
        if covered(self):
            swapped.append("advantages")
        return swapped

    def replicas(self) -> list:
        """The modules every replica must hold identically."""
        return policy_modules(self)

    def share_initial_weights(self) -> None:
        """GMI 0's weights (and normaliser statistics) everywhere, then checked identical."""
        group = self.lockstep.group
        group.broadcast_module(self.model, "initial weights")
        if self.has_central_value:
            group.broadcast_module(self.central_value_net, "initial critic weights")
        group.check_same(self.replicas(), "initial weights")

    def prepare_dataset(self, batch_dict):
        if self.lockstep is None:
            return super().prepare_dataset(batch_dict)
        group = self.lockstep.group
        synced_prepare_dataset(
            self,
            batch_dict,
            super().prepare_dataset,
            lambda moments: group.all_gather_vector(moments, "advantage statistics"),
        )

    def trancate_gradients_and_step(self):
        if self.lockstep is not None:
            self.lockstep.average_gradients(self.model.parameters())
        return super().trancate_gradients_and_step()


def announce(group: GmiGroup, swapped: list[str]) -> None:
    """GMI 0 says which statistics its group keeps in step."""
    if group.rank == 0 and swapped:
        say(f"normaliser statistics synchronised across GMIs: {', '.join(swapped)}")
