"""rl-games' continuous PPO agent that ends training at an epoch boundary when the run is asked
to stop (see :mod:`isaacgymenvs_gmi.gmi.stop`), and remembers its last checkpoint."""

from __future__ import annotations

import time

from rl_games.algos_torch.a2c_continuous import A2CAgent

from isaacgymenvs_gmi.gmi.faults import EpochHook, no_fault
from isaacgymenvs_gmi.gmi.stop import StopCheck, never_stop
from isaacgymenvs_gmi.rl.finite_check import ensure_finite


class StoppableAgent(A2CAgent):
    """``a2c_continuous`` plus a stop check after every epoch (and the fault-injection hook
    before it), and a check that the epoch left the weights and statistics finite.

    When ``should_stop`` returns a signal, the agent makes the epoch just finished its last one:
    rl-games' own end of training then writes the final ``last_*`` checkpoint and returns.
    """

    def __init__(
        self,
        base_name,
        params,
        *,
        should_stop: StopCheck = never_stop,
        before_epoch: EpochHook = no_fault,
    ):
        super().__init__(base_name, params)
        self.should_stop, self.before_epoch = should_stop, before_epoch
        self.stopped_by: int | None = None  # the signal that ended training early
        self.last_checkpoint: str | None = None  # the file written last by this agent
        self._epoch_starts: list[float] = []  # perf_counter as each epoch starts
        self._last_end = 0.0

    @property
    def epoch_seconds(self) -> list[float]:
        """Wall time of each epoch, from its start to the next one's (the last: to its end):
        play and update, and what runs between epochs (statistics, checkpoints, the
        collectives that keep GMIs in step)."""
        marks = [*self._epoch_starts, self._last_end]
        return [b - a for a, b in zip(marks, marks[1:], strict=False)]

    def train_epoch(self):
        self._epoch_starts.append(time.perf_counter())
        self.before_epoch(self.epoch_num + 1)
        result = super().train_epoch()
        ensure_finite(self._learner_modules(), self.epoch_num)
        self._last_end = time.perf_counter()
        signum = self.should_stop()
        if signum is not None and self.stopped_by is None:
            self.stopped_by = signum
            self.max_epochs = self.epoch_num  # rl-games ends the run after this epoch
        return result

    def _learner_modules(self) -> list:
        cv = self.central_value_net if getattr(self, "has_central_value", False) else None
        return [self.model, *([cv] if cv is not None else [])]

    def save(self, fn):
        super().save(fn)
        self.last_checkpoint = fn + ".pth"
