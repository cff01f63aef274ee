"""What an async run's trainers agree on (``gmi.trainers`` = K).

K trainers are replicas of one learner, kept identical by the lockstep. Each turn they vote:
they train only when every one holds a whole batch, and stop when any was asked to or decided
to; after each epoch they add up their counters and episode statistics. With one trainer,
:class:`SoloTrainer` answers every question locally, with no collective.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from isaacgymenvs_gmi.runners.shared.lockstep import PpoLockstep


@dataclass(frozen=True)
class Vote:
    train: bool  # every trainer holds a whole batch
    signum: int | None  # a stop signal any trainer received (the highest)
    finish: bool  # some trainer decided the run is over


def tally(rows: torch.Tensor) -> Vote:
    """The vote of (K, 3) int64 rows ``[ready, signal or 0, finish]``, one per trainer."""
    return Vote(bool(rows[:, 0].all()), int(rows[:, 1].max()) or None, bool(rows[:, 2].any()))


class SoloTrainer:
    """The only trainer: its vote is the outcome."""

    size = 1

    def vote(self, ready: bool, signum: int | None, finish: bool) -> Vote:
        return Vote(ready, signum, finish)

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        return values.detach().cpu().unsqueeze(0)

    def merge_meters(self, agent) -> None:
        pass

    def check_same(self, agent, what: str) -> None:
        pass


class TrainerTeam:
    """Trainer ``lockstep.group.rank`` of the K in ``lockstep.group``."""

    def __init__(self, lockstep: PpoLockstep):
        self.lockstep, self.group = lockstep, lockstep.group
        self.size = self.group.world_size

    def vote(self, ready: bool, signum: int | None, finish: bool) -> Vote:
        mine = torch.tensor([int(ready), signum or 0, int(finish)], dtype=torch.int64)
        return tally(self.group.all_gather_vector(mine, "trainer vote"))

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        """(K, L): every trainer's ``values`` (L,), in trainer order."""
        return self.group.all_gather_vector(values, "trainer counters")

    def merge_meters(self, agent) -> None:
        self.lockstep.merge_episode_meters(agent)

    def check_same(self, agent, what: str) -> None:
        """Raise unless every trainer holds bit-identical weights and statistics."""
        self.group.check_same(agent.replicas(), what)
