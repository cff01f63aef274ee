"""A trainer's loop: take chunks, train when a batch is whole (on every trainer, with several),
publish the new policy, keep rl-games' run bookkeeping (summaries, best and last checkpoints,
epoch and frame limits), and at the end account for every chunk the actors produced."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import torch

from isaacgymenvs_gmi.channels import Batcher, Collector, Ledger, balance_line, flatten
from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, PRODUCED_TRANSITIONS, STOPPED
from isaacgymenvs_gmi.channels.wiring import TrainerLinks
from isaacgymenvs_gmi.gmi.liveness import is_alive
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.runners.result import RunResult

from .team import SoloTrainer, TrainerTeam
from .telemetry import AsyncTelemetry, progress_line

log = logging.getLogger(__name__)
IDLE_SLEEP_S = 0.0005
ACTORS_STOP_TIMEOUT_S = 30.0
CHECK_EVERY = 10  # epochs between replica fingerprint checks (several trainers)


class TrainerLoop:
    """Trains ``agent`` (an :class:`~.trainer.AsyncPpoAgent`) from ``links``.

    Args:
        should_stop: the stop signal this GMI received (graceful stop), or None.
        lead: this is the first trainer: it publishes weights, logs and writes checkpoints.
        team: the other trainers (:class:`~.team.TrainerTeam`), or the only trainer.
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
    ):
        self.agent, self.modules, self.links = agent, modules, links
        self.collector, self.batcher, self.ledger = collector, batcher, ledger
        self.should_stop, self.lead = should_stop, lead
        self.team = team or SoloTrainer()
        self.actors = sorted(links.routes)
        self.version = 0
        self._flat = flatten(modules)
        self.telemetry = AsyncTelemetry()
        self.started = self._last_trained = time.perf_counter()
        self.history: list[tuple[int, float, float]] = []
        self.mean_reward: float | None = None
        self.mean_length: float | None = None
        self.stopped_by: int | None = None
        self.finished = False  # agreed by every trainer
        self._done = False  # this trainer's own decision (limits, score to win)
        self._held: dict[str, torch.Tensor] | None = None  # a whole batch, until all have one
        self.rates = None
        agent.init_tensors()
        agent.last_mean_rewards = -1e9
        self.publish()

    def publish(self) -> None:
        if self.links.board is not None:
            self.links.board.publish(flatten(self.modules, self._flat), self.version)

    def produced(self) -> dict[int, int]:
        """Transitions each actor sent to this trainer."""
        return {a: r.control(PRODUCED_TRANSITIONS) for a, r in self.links.routes.items()}

    # --- one turn ----------------------------------------------------------------------------
    def step(self) -> bool:
        """Take what arrived and train one epoch if a batch is whole (on every trainer);
        returns whether it trained. Sets ``finished`` once the trainers agree the run is over.
        With several trainers this is collective: each calls it in turn."""
        signum = self.should_stop()
        if self._held is None and not self._done and signum is None:
            if self.batcher.waiting() < self.batcher.per_batch:  # bounded: rings hold the rest
                self.batcher.add(self.collector.poll())
            self._held = self.batcher.next_batch(self.version)
        vote = self.team.vote(self._held is not None, signum, self._done)
        if vote.signum is not None or vote.finish:
            if vote.signum is not None and self.stopped_by is None:
                self.stopped_by = vote.signum
            if self._held is not None:  # taken, never trained on
                self.batcher.put_back(self._held)
                self._held = None
            self.finished = True
            return False
        if not vote.train:
            return False
        batch, self._held = self._held, None
        self._train(batch)
        return True

    def run(self) -> None:
        while not self.finished:
            if not self.step():
                time.sleep(IDLE_SLEEP_S)

    def _train(self, batch: dict[str, torch.Tensor]) -> None:
        agent = self.agent
        done = (batch["terminated"] | batch["truncated"]).reshape(-1)
        if done.any():
            ended = done.nonzero().squeeze(-1)
            returns = batch["episode_return"].reshape(-1)[ended].unsqueeze(-1)
            agent.game_rewards.update(returns.to(agent.ppo_device))
            agent.game_shaped_rewards.update(returns.to(agent.ppo_device))
            agent.game_lengths.update(
                batch["episode_length"].reshape(-1)[ended].to(agent.ppo_device)
            )
        result, seconds = agent.train_from(batch, time.perf_counter() - self._last_trained)
        self.version += 1
        self.publish()
        self._last_trained = time.perf_counter()
        frames = int(batch["rewards"].numel()) * self.team.size  # every trainer took a batch
        agent.frame += frames
        epoch = agent.epoch_num
        self.team.merge_meters(agent)
        if epoch % CHECK_EVERY == 0:
            self.team.check_same(agent, f"after {epoch} epochs")
        reward = None
        if agent.game_rewards.current_size > 0:
            reward = float(agent.game_rewards.get_mean().reshape(-1)[0])
            self.mean_reward = reward
            self.mean_length = float(agent.game_lengths.get_mean().reshape(-1)[0])
        produced, consumed, dropped, depth = self._run_counters()
        self.rates = self.telemetry.sample(produced, consumed)
        if self.lead:
            self._report(result, seconds, frames, reward, dropped, depth)
        if agent.max_epochs != -1 and epoch >= agent.max_epochs:
            self._done = True
        if agent.max_frames != -1 and agent.frame >= agent.max_frames:
            self._done = True

    def _run_counters(self) -> tuple[dict[int, int], int, int, int]:
        """Over every trainer: (transitions each actor produced, transitions trained on,
        transitions dropped, chunks queued)."""
        mine = self.produced()
        depth = self.collector.depth() + self.batcher.waiting()
        ledger = self.ledger
        row = [*(mine[a] for a in self.actors), ledger.consumed, ledger.dropped, depth]
        *produced, consumed, dropped, depth = self.team.gather(torch.tensor(row)).sum(0).tolist()
        return dict(zip(self.actors, produced, strict=True)), consumed, dropped, depth

    def _report(
        self,
        result: tuple,
        seconds: float,
        frames: int,
        reward: float | None,
        dropped: int,
        depth: int,
    ) -> None:
        agent, epoch = self.agent, self.agent.epoch_num
        total = time.perf_counter() - self.started
        step_time, play_time, update_time, _, a_l, c_l, b_l, ent, kls, last_lr, lr_mul = result
        agent.write_stats(
            total,
            epoch,
            step_time,
            play_time,
            update_time,
            a_l,
            c_l,
            ent,
            kls,
            last_lr,
            lr_mul,
            agent.frame,
            seconds,
            play_time,
            frames,
        )
        lag = self.batcher.lag  # this trainer's
        writer = agent.writer
        rates = self.rates
        for tag, value in (
            ("async/pps", rates.pps),
            ("async/ttop", rates.ttop),
            ("async/env_steps_per_s", rates.pps),
            ("async/queue_depth", depth),
            ("async/dropped_transitions", dropped),
            ("async/policy_version", self.version),
        ):
            writer.add_scalar(tag, value, agent.frame)
        recent = lag.take_recent()
        if recent:
            writer.add_scalar("async/lag_mean", sum(recent) / len(recent), agent.frame)
            writer.add_scalar("async/lag_max", max(recent), agent.frame)
        for actor, value in rates.per_actor.items():
            writer.add_scalar(f"async/pps_actor{actor}", value, agent.frame)
        if reward is not None:
            self.history.append((agent.frame, total, reward))
            for tag in ("rewards/step", "episode/reward"):
                writer.add_scalar(tag, reward, agent.frame)
            writer.add_scalar("rewards/time", reward, total)
            self._save_best(reward)
        if agent.save_freq > 0 and epoch % agent.save_freq == 0:
            agent.save(os.path.join(agent.nn_dir, f"last_{agent.config['name']}_ep_{epoch}"))
        say(
            progress_line(
                epoch,
                agent.max_epochs,
                rates,
                (lag.low, lag.mean, lag.high),
                depth,
                dropped,
                reward,
                elapsed_s=total,
            )
        )

    def _save_best(self, reward: float) -> None:
        agent = self.agent
        if reward > agent.last_mean_rewards and agent.epoch_num >= agent.save_best_after:
            agent.last_mean_rewards = reward
            agent.save(os.path.join(agent.nn_dir, agent.config["name"]))
            win = agent.config.get("score_to_win")
            if win is not None and reward > win:
                say(f"score_to_win {win} reached: {reward:.2f}")
                self._done = True

    # --- the end -----------------------------------------------------------------------------
    def stop_actors(self, timeout_s: float) -> list[int]:
        """Tell actors to stop and wait until each has stopped or died; returns the actors
        that did neither in time."""
        if self.links.board is not None:
            self.links.board.request_stop()
        deadline = time.monotonic() + timeout_s
        while True:
            waiting = [a for a, r in self.links.routes.items() if not _gone(r)]
            if not waiting or time.monotonic() > deadline:
                return waiting
            self.batcher.add(self.collector.poll())  # keep taking, so no actor waits for room
            time.sleep(0.01)

    def account(self) -> tuple[int, tuple[int, int, int], str]:
        """After the actors stopped: every chunk still in the rings or held is in flight.
        Returns (produced, (consumed, dropped, in flight), balance line)."""
        self.batcher.add(self.collector.poll())
        self.batcher.drain()
        mine = torch.tensor([sum(self.produced().values()), *self.ledger.totals()])
        produced, *totals = (int(n) for n in self.team.gather(mine).sum(0))
        return produced, tuple(totals), balance_line(produced, *totals)

    def finish(self) -> RunResult:
        """Stop the actors, account for every chunk, write the last checkpoint, report."""
        stuck = self.stop_actors(ACTORS_STOP_TIMEOUT_S)
        if stuck:
            log.warning(
                "actor GMI(s) %s did not stop in time; their chunks count as in flight", stuck
            )
        produced, (consumed, dropped, in_flight), line = self.account()
        lags = self._lag_histogram()
        self.team.check_same(self.agent, f"end of training, {self.agent.epoch_num} epochs")
        checkpoint = self.save_last()
        agent = self.agent
        if self.lead:
            say(line)  # the closing line (reason, frames, checkpoint) comes from the launcher
            agent.writer.close()  # flush the summaries
        return RunResult(
            mean_reward=self.mean_reward,
            mean_length=self.mean_length,
            frames=int(agent.frame),
            experiment_dir=getattr(agent, "experiment_dir", None) if self.lead else None,
            history=self.history,
            stopped_by=self.stopped_by,
            checkpoint=checkpoint,
            rates={} if self.rates is None else {"pps": self.rates.pps, "ttop": self.rates.ttop},
            channels={
                "produced": produced,
                "consumed": consumed,
                "dropped": dropped,
                "in_flight": in_flight,
                "lag": lags,
            },
        )

    def _lag_histogram(self) -> dict[int, int]:
        """Lag -> chunks trained on, over every trainer."""
        mine = self.batcher.lag.histogram
        width = int(self.team.gather(torch.tensor([max(mine, default=-1) + 1])).max())
        counts = torch.zeros(width, dtype=torch.int64)
        for lag, n in mine.items():
            counts[lag] = n
        total = self.team.gather(counts).sum(0) if width else counts
        return {lag: int(n) for lag, n in enumerate(total.tolist()) if n}

    def save_last(self) -> str | None:
        if not self.lead:
            return None
        agent = self.agent
        reward = "_" if self.mean_reward is None else f"{self.mean_reward:.2f}"
        path = os.path.join(
            agent.nn_dir, f"last_{agent.config['name']}_ep_{agent.epoch_num}_rew_{reward}"
        )
        agent.save(path)
        return path + ".pth"


def _gone(route) -> bool:
    if route.control(ACTOR_STATE) == STOPPED:
        return True
    pid = route.control(ACTOR_PID)
    if pid <= 0:
        return False
    return not is_alive(pid)  # a stopped actor is not gone
