"""rl-games' continuous PPO agent, one per GMI, kept in lockstep with the other GMIs.

It never sets rl-games' ``multi_gpu`` (which calls ``init_process_group("nccl")`` itself): every
cross-GMI exchange goes through the group and the lockstep. GMI 0 alone logs and writes
checkpoints; the others keep rl-games' bookkeeping with its side effects off, so stop decisions
are made everywhere from identical values and agree.
"""

from __future__ import annotations

import torch

from isaacgymenvs_gmi.runners.shared.lockstep import PpoLockstep, ReplicatedPpo, announce
from isaacgymenvs_gmi.runners.shared.stopping import StoppableAgent
from isaacgymenvs_gmi.sim.compile_cache import compile_counts

CHECK_EVERY = 10  # epochs between replica fingerprint checks


class GmiPpoAgent(ReplicatedPpo, StoppableAgent):
    """``a2c_continuous`` with gradient reduction, weight broadcast and synchronised statistics.
    Its ``self.frame`` is the run's total over all GMIs (right when resumed on another count)."""

    def __init__(self, base_name, params, *, lockstep: PpoLockstep, **hooks):
        """``hooks``: :class:`StoppableAgent`'s (its stop check, epoch hook, telemetry)."""
        super().__init__(base_name, params, **hooks)
        group = self.group = lockstep.group
        announce(group, self.replicate(lockstep))
        worlds = getattr(getattr(self.vec_env.env, "backend", None), "worlds", None)
        group.check_pools(mujoco=getattr(worlds, "num_threads", None))
        group.startup_barrier("agent built")
        self.share_initial_weights()

    def train(self):
        result = super().train()
        self.group.check_same(self.replicas(), f"end of training, {self.epoch_num} epochs")
        return result

    def train_epoch(self):
        if self.epoch_num % CHECK_EVERY == 0:  # before the first update, then periodically
            self.group.check_same(self.replicas(), f"after {self.epoch_num} epochs")
        return super().train_epoch()  # with end_epoch and the stop check (both collective)

    def end_epoch(self, result) -> None:
        """Every GMI's frames and episodes counted, then the progress line (collective)."""
        self.curr_frames *= self.group.world_size  # every GMI played as many frames as this one
        self.lockstep.merge_episode_meters(self)
        super().end_epoch(result)

    def compile_note(self) -> str:
        """GMI 0's XLA programs, and the other GMIs' summed (collective)."""
        counts = compile_counts()
        mine = [counts.loaded_whole, counts.loaded, counts.compiled]
        mine = torch.tensor(mine, dtype=torch.float64)
        rows = self.group.all_gather_vector(mine, "XLA program counts")
        whole, loaded, compiled = (int(x) for x in rows[1:].sum(dim=0).tolist())
        return (
            f"{counts.describe()} (the other {self.group.world_size - 1} GMIs: "
            + (f"{whole} loaded whole, " if whole else "")
            + f"{loaded} loaded, {compiled} compiled)"
        )

    def save(self, fn):
        if self.group.rank == 0:
            super().save(fn)
