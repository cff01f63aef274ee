"""Several rl-games PPO learners kept bit-identical, one per GMI (sync PPO's GMIs, an async
run's trainers): gradients averaged through the layout's reducer, normaliser and advantage
statistics over the union batch, the adaptive learning rate from the mean KL, episode
statistics merged, and the checks that prove it.

A minibatch costs one collective: the gradient all-reduce, which also carries its KL. The
normaliser's moments of a whole mini-epoch are gathered once as it starts (:class:`MomentsAhead`).
"""

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
from isaacgymenvs_gmi.patches.synced_normalizers import (
    SyncedRunningMeanStd,
    batch_moments,
    sync_normalizers,
)
from isaacgymenvs_gmi.placement.layout import GmiLayout

from .agents import policy_modules


class PpoLockstep:
    """One learner's exchanges with the others of ``group``; ``reducer`` carries the
    gradients. ``copies``: how many GMIs hold copies of one batch (``gmi.debug.same_data``: all
    of them), so that the union of their statistics counts as that one batch
    (:func:`~patches.synced_normalizers.union_moments`)."""

    def __init__(self, group: GmiGroup, reducer: Reducer, copies: int = 1):
        self.group, self.reducer, self.copies = group, reducer, copies
        self.buckets = GradientBuckets()
        self.kls: list[torch.Tensor] = []  # minibatch KLs averaged over GMIs, not yet used

    def average_gradients(
        self, params: Iterable[torch.nn.Parameter], riders: torch.Tensor | None = None
    ) -> torch.Tensor | None:
        """Each ``.grad`` becomes its mean over GMIs: flatten into buckets, reduce, unflatten.
        ``riders``: (k,) float32 scalars averaged in the same collective; returns their mean."""
        return self.buckets.reduce(params, self._mean, riders)

    def reduce_gradients_and_kl(
        self, params: Iterable[torch.nn.Parameter], kl: torch.Tensor | None
    ) -> None:
        """:meth:`average_gradients`, with this GMI's minibatch ``kl`` (a 0-d tensor, or None)
        riding along; the mean KL waits in :attr:`kls` for the learning-rate schedule."""
        riders = None if kl is None else kl.detach().reshape(1).float()
        mean = self.average_gradients(params, riders)
        if mean is not None:
            self.kls.append(mean[0].clone())  # a view of the bucket, which the next one reuses

    def mean_kl(self, fallback: float) -> float:
        """The mean over GMIs of the KLs since the last call, or, where none rode along,
        ``fallback`` (this GMI's KL) averaged in a collective of its own."""
        kls, self.kls = self.kls, []
        if not kls:
            return self.group.mean_scalar("kl", fallback)
        return float(torch.stack(kls).double().mean())

    def _mean(self, flat: torch.Tensor) -> None:
        self.group.guard(f"gradient {self.reducer.strategy}", lambda: self.reducer.mean(flat))

    def merge_meter(self, meter, shape: tuple[int, ...]) -> None:
        """Make an rl-games AverageMeter hold the mean over all GMIs' tracked episodes;
        ``shape``: the mean's shape as rl-games' own updates leave it."""
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
    ctx: GmiContext, layout: GmiLayout, group: GmiGroup | None, copies: int = 1
) -> PpoLockstep | None:
    """The lockstep of ``layout``'s GMIs (the run's first ones) over ``group``, their own.
    Collective over the whole run: GMIs outside ``layout`` (``group`` None) get None.
    ``copies``: see :class:`PpoLockstep`."""
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
    return PpoLockstep(group, reducer, copies)


class SyncedScheduler:
    """Wraps an rl-games LR scheduler so every GMI decides from the KL averaged over all GMIs."""

    def __init__(self, inner, lockstep: PpoLockstep):
        self.inner, self.lockstep = inner, lockstep

    def update(self, current_lr, entropy_coef, epoch, frames, kl_dist=None, **kwargs):
        if kl_dist is not None:
            kl_dist = self.lockstep.mean_kl(float(kl_dist))
            return self.inner.update(current_lr, entropy_coef, epoch, frames, kl_dist, **kwargs)
        return self.inner.update(current_lr, entropy_coef, epoch, frames, **kwargs)

    def __getattr__(self, name):
        return getattr(self.inner, name)


class ReplicatedPpo:
    """Mixin for rl-games' continuous PPO agent (list it first): after :meth:`replicate`, every
    update goes through the lockstep; without it the agent is rl-games' own."""

    lockstep: PpoLockstep | None = None

    def replicate(self, lockstep: PpoLockstep) -> list[str]:
        """Route this agent's exchanges through ``lockstep`` (call once, after rl-games'
        ``__init__``); returns the statistics now synchronised."""
        group, self.lockstep = lockstep.group, lockstep
        self.scheduler = SyncedScheduler(self.scheduler, lockstep)
        swapped = sync_normalizers(
            self,
            lambda moments: group.all_gather_vector(moments, "normaliser statistics"),
            lockstep.copies,
        )
        self._moments_ahead = MomentsAhead(self.model, group)
        self._outputs = ForwardTap(self.model)
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
        """What every replica must hold identically: the modules, the optimizer's state and,
        with mixed precision, the gradient scaler's."""
        scaler = [self.scaler] if self.scaler.is_enabled() else []
        return [*policy_modules(self), self.optimizer, *scaler]

    def collective_clock(self) -> tuple[float, int]:
        if self.lockstep is None:
            return super().collective_clock()
        guard = self.lockstep.group.guard
        return guard.seconds, guard.count

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
            self.lockstep.copies,
        )
        self._minibatches_done = 0

    def train_actor_critic(self, input_dict):
        if self.lockstep is not None:
            if self._minibatches_done % len(self.dataset) == 0:  # a mini-epoch starts
                self._moments_ahead.gather(self)
            self._minibatches_done += 1
            self._minibatch = input_dict
        return super().train_actor_critic(input_dict)

    def reduce_gradients(self) -> None:
        """The minibatch's gradients averaged over GMIs, its KL riding along."""
        if self.lockstep is not None:
            kl = self._outputs.kl(self._minibatch) if not self.is_rnn else None
            self.lockstep.reduce_gradients_and_kl(self.model.parameters(), kl)

    def audit_collectives(self):
        if self.lockstep is None:
            return super().audit_collectives()
        group = self.lockstep.group
        return (
            lambda row: group.all_gather_vector(row, "numerical audit"),
            lambda verdict: agree_on(group, verdict, "numerical audit verdict"),
        )


class ForwardTap:
    """Keeps the policy's means and stds from ``model``'s last training-mode forward pass, so a
    minibatch's KL is known before its gradients are reduced."""

    def __init__(self, model: torch.nn.Module):
        self.mu = self.sigma = None
        model.register_forward_hook(self._keep)

    def _keep(self, module, args, out) -> None:
        if module.training and isinstance(out, dict) and "mus" in out:
            self.mu, self.sigma = out["mus"].detach(), out["sigmas"].detach()

    def kl(self, minibatch: dict) -> torch.Tensor | None:
        """The minibatch's mean KL between the policy it was collected with and the one just
        evaluated, as rl-games computes it (None before a forward pass)."""
        if self.mu is None:
            return None
        mu, sigma, self.mu, self.sigma = self.mu, self.sigma, None, None
        with torch.no_grad():
            return torch_ext.policy_kl(mu, sigma, minibatch["mu"], minibatch["sigma"], True)


class MomentsAhead:
    """The normaliser's batch moments of every minibatch of a mini-epoch, gathered from all GMIs
    in one collective as it starts; each update then folds its own rows, in order."""

    def __init__(self, model: torch.nn.Module, group: GmiGroup):
        self.group = group
        rms = getattr(model, "running_mean_std", None)
        self.normalizer = rms if isinstance(rms, SyncedRunningMeanStd) else None

    def gather(self, agent) -> None:
        """Queue the gathered rows of every minibatch of ``agent.dataset`` (non-RNN, one obs
        tensor; otherwise each update gathers its own)."""
        rms = self.normalizer
        obs = agent.dataset.values_dict.get("obs")
        if rms is None or agent.is_rnn or not isinstance(obs, torch.Tensor):
            return
        size = agent.dataset.minibatch_size
        with torch.no_grad():
            mine = torch.stack(  # (minibatches, 1 + 2C), as each update would compute them
                [
                    batch_moments(rms, agent._preproc_obs(obs[i * size : (i + 1) * size]))
                    for i in range(len(agent.dataset))
                ]
            )
        rows = self.group.all_gather_vector(mine, "normaliser statistics")  # (GMIs, mb, 1+2C)
        rms.expect(list(rows.unbind(1)))


def agree_on(group: GmiGroup, text: str | None, what: str) -> str | None:
    """GMI 0's ``text`` (None: nothing to say) on every GMI: a flag in one collective, the
    text through the run's store."""
    key = f"gmi/said/{what}/{group.guard.count}"
    if group.rank == 0 and text is not None:
        group.store.set(key, text)
    flags = group.all_gather_vector(torch.tensor([float(text is not None)]), what)
    if not flags[0, 0]:
        return None
    return text if group.rank == 0 else group.store.get(key).decode()


def announce(group: GmiGroup, swapped: list[str]) -> None:
    """GMI 0 says which statistics its group keeps in step."""
    if group.rank == 0 and swapped:
        say(f"normaliser statistics synchronised across GMIs: {', '.join(swapped)}")
