"""rl-games' continuous PPO agent that ends training at an epoch boundary when the run is asked
to stop (see :mod:`isaacgymenvs_gmi.gmi.stop`), remembers its last checkpoint and why training
ended, and shows the progress line after every epoch."""

from __future__ import annotations

import logging
import time
from typing import Any, Protocol

from rl_games.algos_torch.a2c_continuous import A2CAgent

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.gmi.faults import EpochHook, no_fault
from isaacgymenvs_gmi.gmi.stop import StopCheck, never_stop
from isaacgymenvs_gmi.rl.finite_check import ensure_finite, epoch_values
from isaacgymenvs_gmi.rl.nonfinite_trace import NonFiniteTrace
from isaacgymenvs_gmi.sim.compile_cache import compile_counts

from .agents import policy_modules

log = logging.getLogger(__name__)


class EpochReport(Protocol):
    """Where an agent reports each epoch (a mode's progress line and TensorBoard tags)."""

    def record(
        self,
        *,
        epoch: int,
        max_epochs: int,
        max_frames: int,
        frames: int,
        epoch_seconds: float,
        reward: float | None,
        writer: Any,
    ) -> None: ...

    def close(self) -> None: ...


class StoppableAgent(A2CAgent):
    """``a2c_continuous`` plus a stop check after every epoch (and the fault-injection hook
    before it), a check that the epoch left the weights and statistics finite, and the epoch's
    progress line (``telemetry``, where given).

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
        telemetry: EpochReport | None = None,
        trace: NonFiniteTrace | None = None,
    ):
        super().__init__(base_name, params)
        self.should_stop, self.before_epoch = should_stop, before_epoch
        self.telemetry, self.trace = telemetry, trace
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

    @property
    def ended_by(self) -> str | None:
        """The limit that ended training (``max_epochs``, ``max_frames``, ``score_to_win``), or
        None (stopped by a signal, or not ended)."""
        if self.stopped_by is not None:
            return None
        if self.max_epochs != -1 and self.epoch_num >= self.max_epochs:
            return "max_epochs"
        if self.max_frames != -1 and self.frame >= self.max_frames:
            return "max_frames"
        win = self.config.get("score_to_win")
        if win is not None and self.last_mean_rewards > win:
            return "score_to_win"
        return None

    def train(self):
        startup_clock.mark("agent_built")
        try:
            return super().train()
        finally:
            if self.telemetry is not None:
                self.telemetry.close()

    def calc_gradients(self, input_dict):
        if self.trace is None:
            return super().calc_gradients(input_dict)
        return self.trace.step(self, input_dict, super().calc_gradients)

    def train_epoch(self):
        self._epoch_starts.append(time.perf_counter())
        self.before_epoch(self.epoch_num + 1)
        result = super().train_epoch()
        reward = self.game_rewards.get_mean() if self.game_rewards.current_size else None
        ensure_finite(policy_modules(self), self.epoch_num, epoch_values(result, reward))
        self._last_end = time.perf_counter()
        self.end_epoch(result)
        signum = self.should_stop()
        if signum is not None and self.stopped_by is None:
            self.stopped_by = signum
            self.max_epochs = self.epoch_num  # rl-games ends the run after this epoch
        return result

    def end_epoch(self, result) -> None:
        """After the epoch's update, before its stop check and rl-games' statistics: its
        progress line (``result``: what rl-games' ``train_epoch`` returned); after the first,
        how its XLA programs were had (compiled or from the cache)."""
        if self.epoch_num == 1:
            startup_clock.mark("first_epoch")
            log.info(startup_clock.startup_line(self.compile_note()))
        if self.telemetry is None:
            return
        meter = self.game_rewards
        self.telemetry.record(
            epoch=self.epoch_num,
            max_epochs=int(self.max_epochs),
            max_frames=int(self.max_frames),
            frames=int(self.frame + self.curr_frames),  # rl-games adds this epoch's after
            epoch_seconds=float(result[3]),  # rl-games: step, play, update, total times
            reward=float(meter.get_mean().reshape(-1)[0]) if meter.current_size else None,
            writer=getattr(self, "writer", None),
        )

    def compile_note(self) -> str:
        """How this process's XLA programs were had so far (for the start-up line)."""
        return compile_counts().describe()

    def save(self, fn):
        super().save(fn)
        self.last_checkpoint = fn + ".pth"
