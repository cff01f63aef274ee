"""rl-games' continuous PPO agent that ends training at an epoch boundary when asked to stop
(:mod:`isaacgymenvs_gmi.gmi.stop`), remembers its last checkpoint and why training ended, and
shows the progress line after every epoch."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from rl_games.algos_torch.a2c_continuous import A2CAgent

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.gmi.faults import EpochHook, GradientHook, no_fault
from isaacgymenvs_gmi.gmi.stop import StopCheck, never_stop
from isaacgymenvs_gmi.rl.audit import GradientAudit
from isaacgymenvs_gmi.rl.epoch_work import EpochMeter, EpochWork, optimizer_steps
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
        work: EpochWork,
    ) -> None: ...

    def close(self) -> None: ...


class StoppableAgent(A2CAgent):
    """``a2c_continuous`` plus a stop check after every epoch (the fault hook before it), a
    finiteness check of weights and statistics, and the progress line (``telemetry``).
    A stop signal makes the epoch just finished the last: rl-games' own end of training then
    writes the final ``last_*`` checkpoint.
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
        audit: Callable[[Any], GradientAudit] | None = None,
        gradient_fault: GradientHook | None = None,
    ):
        """``audit``: builds the numerical audit from :meth:`audit_collectives`;
        ``gradient_fault``: corrupts this GMI's gradients before they are reduced."""
        super().__init__(base_name, params)
        self.should_stop, self.before_epoch = should_stop, before_epoch
        self.telemetry, self.trace = telemetry, trace
        self._audit_factory = audit  # built at first use, when the collectives are in place
        self.audit: GradientAudit | None = None
        self.gradient_fault = gradient_fault
        self.stopped_by: int | None = None  # the signal that ended training early
        self.last_checkpoint: str | None = None  # the file written last by this agent
        self._epoch_starts: list[float] = []  # perf_counter as each epoch starts
        self._last_end = 0.0
        self.meter = EpochMeter()
        self._collective_after_update = 0.0
        self._minibatch_in_epoch = 0

    @property
    def skipped_steps(self) -> int:
        """Optimizer steps the gradient scaler skipped so far (inf or NaN gradients)."""
        return self.meter.skipped_total

    def collective_clock(self) -> tuple[float, int]:
        """Seconds spent so far in exchanges with other GMIs, and how many (none here)."""
        return 0.0, 0

    def audit_collectives(self) -> tuple[Callable, Callable]:
        """The numerical audit's gather and verdict agreement: here, one GMI's own."""
        return (lambda row: row[None]), (lambda verdict: verdict)

    def reduce_gradients(self) -> None:
        """Average this minibatch's gradients with the other GMIs' (none here)."""

    def _clocks(self) -> tuple[int | None, float, float, int]:
        """What :class:`EpochMeter` reads at both ends of an epoch: optimizer steps taken,
        the env's hand-off seconds, the collective seconds and count (all cumulative)."""
        handoff = getattr(getattr(self.vec_env, "env", None), "handoff_s", 0.0)
        return optimizer_steps(self.optimizer), handoff, *self.collective_clock()

    @property
    def epoch_seconds(self) -> list[float]:
        """Wall time of each epoch, from its start to the next one's (the last: to its end)."""
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
        if self._audit_factory is not None and self.audit is None:
            self.audit = self._audit_factory(*self.audit_collectives())
        audited = self.audit is not None and self.audit.due(self, self._minibatch_in_epoch)
        self._minibatch_in_epoch += 1
        if audited:
            self.audit.begin(self, input_dict)
        if self.trace is None:
            super().calc_gradients(input_dict)
        else:
            self.trace.step(self, input_dict, super().calc_gradients)
        if audited:
            self.audit.finish(self)

    def get_action_values(self, obs):
        start = time.perf_counter()
        try:
            return super().get_action_values(obs)
        finally:
            self.meter.add("inference", time.perf_counter() - start)

    def trancate_gradients_and_step(self):
        """This GMI's gradients (fault-injected, audited), reduced across GMIs, audited as
        applied, then rl-games' clip and step."""
        self.meter.updates += 1
        if self.gradient_fault is not None:
            self.gradient_fault(self.epoch_num, list(self.model.parameters()))
        if self.audit is not None:
            self.audit.capture(self, "local")
        self.reduce_gradients()
        if self.audit is not None:
            self.audit.capture(self, "applied")
        return super().trancate_gradients_and_step()

    def train_epoch(self):
        self._minibatch_in_epoch = 0
        self._epoch_starts.append(time.perf_counter())
        self.before_epoch(self.epoch_num + 1)
        self.meter.start(*self._clocks())
        result = super().train_epoch()
        self._collective_after_update = self.collective_clock()[0]
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
        """After the epoch's update, before its stop check: its progress line (``result``:
        rl-games' ``train_epoch``'s); after the first, the start-up line."""
        if self.epoch_num == 1:
            startup_clock.mark("first_epoch")
            log.info(startup_clock.startup_line(self.compile_note()))
        steps, handoff, collective_s, collectives = self._clocks()
        work = self.meter.finish(
            steps,
            handoff,
            collective_s,
            collectives=collectives,
            step_time=float(result[0]),
            update_time=float(result[2]),
            collective_in_update_s=self._collective_after_update,
        )
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
            work=work,
        )

    def compile_note(self) -> str:
        """How this process's XLA programs were had so far (for the start-up line)."""
        return compile_counts().describe()

    def save(self, fn):
        super().save(fn)
        self.last_checkpoint = fn + ".pth"
