"""A trainer's loop: take chunks, train when a batch is whole, publish the new policy, keep
rl-games' run bookkeeping (summaries, best and last checkpoints, epoch and frame limits), and
at the end account for every chunk the actors produced."""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

import torch

from isaacgymenvs_gmi.channels import Batcher, Collector, Ledger, balance_line, flatten
from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, PRODUCED_TRANSITIONS, STOPPED
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.gmi.stop import signal_name
from isaacgymenvs_gmi.runners.result import RunResult

from .links import TrainerLinks
from .telemetry import AsyncTelemetry, progress_line

log = logging.getLogger(__name__)
IDLE_SLEEP_S = 0.0005
ACTORS_STOP_TIMEOUT_S = 30.0


class TrainerLoop:
    """Trains ``agent`` (an :class:`~.trainer.AsyncPpoAgent`) from ``links``.

    Args:
        should_stop: the stop signal this GMI received (graceful stop), or None.
        lead: this is the first trainer: it publishes weights, logs and writes checkpoints.
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
    ):
        self.agent, self.modules, self.links = agent, modules, links
        self.collector, self.batcher, self.ledger = collector, batcher, ledger
        self.should_stop, self.lead = should_stop, lead
        self.version = 0
        self._flat = flatten(modules)
        self.telemetry = AsyncTelemetry()
        self.started = self._last_trained = time.perf_counter()
        self.history: list[tuple[int, float, float]] = []
        self.mean_reward: float | None = None
        self.mean_length: float | None = None
        self.stopped_by: int | None = None
        self.finished = False
        self.rates = None
        agent.init_tensors()
        agent.last_mean_rewards = -1e9
        self.publish()

    def publish(self) -> None:
        if self.links.board is not None:
            self.links.board.publish(flatten(self.modules, self._flat), self.version)

    def produced(self) -> dict[int, int]:
        return {a: r.control(PRODUCED_TRANSITIONS) for a, r in self.links.routes.items()}

    # --- one turn ----------------------------------------------------------------------------
    def step(self) -> bool:
        """Take what arrived and train one epoch if a batch is whole; returns whether it
        trained. Sets ``finished`` when the run is over."""
        signum = self.should_stop()
        if signum is not None and self.stopped_by is None:
            self.stopped_by, self.finished = signum, True
            return False
        if self.batcher.waiting() < self.batcher.per_batch:  # bounded: the rings hold the rest
            self.batcher.add(self.collector.poll())
        batch = self.batcher.next_batch(self.version)
        if batch is None:
            return False
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
        frames = int(batch["rewards"].numel())
        agent.frame += frames
        epoch = agent.epoch_num
        reward = None
        if agent.game_rewards.current_size > 0:
            reward = float(agent.game_rewards.get_mean().reshape(-1)[0])
            self.mean_reward = reward
            self.mean_length = float(agent.game_lengths.get_mean().reshape(-1)[0])
        self.rates = self.telemetry.sample(self.produced(), self.ledger.consumed)
        if self.lead:
            self._report(result, seconds, frames, reward)
        if agent.max_epochs != -1 and epoch >= agent.max_epochs:
            self.finished = True
        if agent.max_frames != -1 and agent.frame >= agent.max_frames:
            self.finished = True

    def _report(self, result: tuple, seconds: float, frames: int, reward: float | None) -> None:
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
        lag = self.batcher.lag
        depth = self.collector.depth() + self.batcher.waiting()
        writer = agent.writer
        rates = self.rates
        for tag, value in (
            ("async/pps", rates.pps),
            ("async/ttop", rates.ttop),
            ("async/env_steps_per_s", rates.pps),
            ("async/queue_depth", depth),
            ("async/dropped_transitions", self.ledger.dropped),
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
                self.ledger.dropped,
                reward,
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
                self.finished = True

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
        produced = sum(self.produced().values())
        totals = self.ledger.totals()
        return produced, totals, balance_line(produced, *totals)

    def finish(self) -> RunResult:
        """Stop the actors, account for every chunk, write the last checkpoint, report."""
        stuck = self.stop_actors(ACTORS_STOP_TIMEOUT_S)
        if stuck:
            log.warning(
                "actor GMI(s) %s did not stop in time; their chunks count as in flight", stuck
            )
        produced, (consumed, dropped, in_flight), line = self.account()
        checkpoint = self.save_last()
        agent = self.agent
        if self.lead:
            say(line)
            if self.stopped_by is not None:
                say(
                    f"stopped by {signal_name(self.stopped_by)} after {agent.frame} frames; "
                    f"final checkpoint: {checkpoint}"
                )
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
                "lag": dict(sorted(self.batcher.lag.histogram.items())),
            },
        )

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
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True
