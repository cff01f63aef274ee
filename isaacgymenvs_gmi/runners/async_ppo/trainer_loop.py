"""A trainer's loop: take chunks, train when a batch is whole (on every trainer, with several),
publish the new policy, and stop when the trainers vote so."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from isaacgymenvs_gmi.channels import Batcher, Collector, Ledger, flatten
from isaacgymenvs_gmi.channels.wiring import TrainerLinks
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.runners.result import RunResult

from .accounting import ACTORS_STOP_TIMEOUT_S, Accounting, ChannelCounters, run_result
from .actor_watch import ActorWatch
from .bookkeeping import Bookkeeping, TrainedEpoch
from .channel_report import report_channels
from .team import SoloTrainer, TrainerTeam
from .telemetry import AsyncTelemetry, Rates

IDLE_SLEEP_S = 0.0005
CHECK_EVERY = 10  # epochs between replica fingerprint checks (several trainers)


class TrainerLoop:
    """Trains ``agent`` (an :class:`~.trainer.AsyncPpoAgent`) from ``links``.

    Args:
        should_stop: the stop signal this GMI received (graceful stop), or None.
        lead: this is the first trainer: it publishes weights, logs and writes checkpoints.
        team: the other trainers (:class:`~.team.TrainerTeam`), or the only trainer.
        watch: drops this trainer's hung actors (:class:`~.actor_watch.ActorWatch`), if given.
    """

    def __init__(
        self,
        agent: Any,
        modules: list,
        links: TrainerLinks,
        collector: Collector,
        batcher: Batcher,
        ledger: Ledger,
        should_stop: Callable[[], int | None],
        lead: bool,
        team: TrainerTeam | SoloTrainer | None = None,
        watch: ActorWatch | None = None,
    ):
        self.agent, self.modules, self.links = agent, modules, links
        self.collector, self.batcher = collector, batcher
        self.should_stop, self.lead = should_stop, lead
        self.team, self.watch = team or SoloTrainer(), watch
        self.accounts = Accounting(links, collector, batcher, ledger, self.team)
        self.version = 0
        self._flat = flatten(modules)
        self.telemetry = AsyncTelemetry()
        self.rates: Rates | None = None
        self.stopped_by: int | None = None
        self.finished = False  # agreed by every trainer
        self._done = False  # this trainer's own decision (limits, score to win)
        self._held: dict[str, torch.Tensor] | None = None  # a whole batch, until all have one
        self.books = Bookkeeping(agent, lead)  # the run's clock starts here
        self._last_trained = self.books.started
        agent.init_tensors()
        self.publish()

    def publish(self) -> None:
        if self.links.board is not None:
            self.links.board.publish(flatten(self.modules, self._flat), self.version)

    def run(self) -> None:
        while not self.finished:
            if self.watch is not None:
                self.watch.check()
            if not self.step():
                time.sleep(IDLE_SLEEP_S)

    def step(self) -> bool:
        """Take what arrived and train one epoch if a batch is whole (on every trainer);
        returns whether it trained; sets ``finished`` once the trainers agree. Collective."""
        signum = self.should_stop()
        if self._held is None and not self._done and signum is None:
            if self.batcher.waiting() < self.batcher.per_batch:  # bounded: rings hold the rest
                self.batcher.add(self.collector.poll())
            self._held = self.batcher.next_batch(self.version)
        vote = self.team.vote(self._held is not None, signum, self._done)
        if vote.signum is not None or vote.finish:
            if vote.signum is not None and self.stopped_by is None:
                self.stopped_by = vote.signum
            if self._held is not None:  # taken, never trained on: in flight
                self.batcher.put_back(self._held)
                self._held = None
            self.finished = True
            return False
        if not vote.train:
            return False
        batch, self._held = self._held, None
        self._train(batch)
        return True

    def _train(self, batch: dict[str, torch.Tensor]) -> None:
        """One epoch on ``batch`` (kind -> (T, N, ...)); collective with several trainers."""
        agent, books, team = self.agent, self.books, self.team
        books.count_episodes(batch)
        result, seconds = agent.train_from(batch, time.perf_counter() - self._last_trained)
        self.version += 1
        self.publish()
        self._last_trained = time.perf_counter()
        epoch = TrainedEpoch(result, seconds, frames=int(batch["rewards"].numel()) * team.size)
        agent.frame += epoch.frames  # every trainer took a batch
        team.merge_meters(agent)
        if agent.epoch_num % CHECK_EVERY == 0:
            team.check_same(agent, f"after {agent.epoch_num} epochs")
        reward = books.read_means()
        counters = self.accounts.counters()
        self.rates = self.telemetry.sample(counters.produced, counters.consumed)
        if self.lead:
            self._report(epoch, reward, counters)
        if books.limit_reached():
            self._done = True

    def _report(self, epoch: TrainedEpoch, reward: float | None, counters: ChannelCounters) -> None:
        """The lead's summaries, checkpoints and progress line."""
        assert self.rates is not None
        elapsed_s = self.books.elapsed_s
        self.books.record(epoch, reward, elapsed_s)
        lag = self.batcher.lag  # this trainer's
        report_channels(self.agent, self.rates, counters, lag, self.version, reward, elapsed_s)

    def finish(self) -> RunResult:
        """Stop the actors, account for every chunk, write the last checkpoint, report."""
        wait_s = self.watch.timeout_s if self.watch is not None else ACTORS_STOP_TIMEOUT_S
        balance = self.accounts.settle(wait_s)  # an actor that cannot stop is bounded too
        self.team.check_same(self.agent, f"end of training, {self.agent.epoch_num} epochs")
        checkpoint = self.books.save_last()
        if self.lead:
            say(balance.line)  # the closing line (reason, frames, checkpoint) is the launcher's
            self.agent.writer.close()  # flush the summaries
        return run_result(self.books, balance, self.stopped_by, checkpoint, self.rates)
