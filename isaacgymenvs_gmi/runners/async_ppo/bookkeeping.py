"""An async trainer's rl-games bookkeeping: the episode meters, the per-epoch summaries, the best
and last checkpoints, and the limits that end a run, as rl-games' own training loop keeps them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

import torch

from isaacgymenvs_gmi.gmi.status import say

NO_BEST = -1e9  # the best mean reward before any: every first one improves on it


@dataclass(frozen=True)
class TrainedEpoch:
    """One epoch: ``result``, what rl-games' ``train_epoch`` returned; ``update_s``, its seconds
    (``train_from``); ``frames``, transitions trained on this epoch by every trainer."""

    result: tuple
    update_s: float
    frames: int


class Bookkeeping:
    """rl-games' run bookkeeping for ``agent``; only the ``lead`` writes summaries and
    checkpoints. Resets the best mean reward: a resumed run saves its first best again."""

    def __init__(self, agent: Any, lead: bool):
        self.agent, self.lead = agent, lead
        self.started = time.perf_counter()
        self.history: list[tuple[int, float, float]] = []  # (frame, wall s, mean reward)
        self.mean_reward: float | None = None
        self.mean_length: float | None = None
        self.ended_by: str | None = None  # "score_to_win", "max_epochs" or "max_frames"
        agent.last_mean_rewards = NO_BEST

    @property
    def elapsed_s(self) -> float:
        """Seconds since the trainer's loop was made."""
        return time.perf_counter() - self.started

    def count_episodes(self, batch: dict[str, torch.Tensor]) -> None:
        """Feed the agent's meters with the episodes that ended in ``batch`` (kind -> (T, N)
        tensors: ``terminated``, ``truncated``, ``episode_return``, ``episode_length``)."""
        done = (batch["terminated"] | batch["truncated"]).reshape(-1)
        if not done.any():
            return
        agent = self.agent
        ended = done.nonzero().squeeze(-1)
        returns = batch["episode_return"].reshape(-1)[ended].unsqueeze(-1).to(agent.ppo_device)
        agent.game_rewards.update(returns)
        agent.game_shaped_rewards.update(returns)
        agent.game_lengths.update(batch["episode_length"].reshape(-1)[ended].to(agent.ppo_device))

    def read_means(self) -> float | None:
        """The meters' mean reward (kept with the mean length), or None before any episode
        ended. Read after the trainers merged their meters."""
        agent = self.agent
        if agent.game_rewards.current_size == 0:
            return None
        self.mean_reward = float(agent.game_rewards.get_mean().reshape(-1)[0])
        self.mean_length = float(agent.game_lengths.get_mean().reshape(-1)[0])
        return self.mean_reward

    def record(self, epoch: TrainedEpoch, reward: float | None, elapsed_s: float) -> None:
        """The lead's part after an epoch: summaries, the reward's history and tags, the best
        checkpoint and, every ``save_frequency`` epochs, a ``last_`` one."""
        self.write_stats(epoch, elapsed_s)
        if reward is not None:
            self.history.append((self.agent.frame, elapsed_s, reward))
            writer, frame = self.agent.writer, self.agent.frame
            for tag in ("rewards/step", "episode/reward"):
                writer.add_scalar(tag, reward, frame)
            writer.add_scalar("rewards/time", reward, elapsed_s)
            self.save_best(reward)
        self.save_every_few_epochs()

    def write_stats(self, epoch: TrainedEpoch, elapsed_s: float) -> None:
        """rl-games' per-epoch summaries (losses, learning rate, KL, fps); the batch's waiting
        time stands for its step time, the update's for the scaled time."""
        agent = self.agent
        step_s, play_s, update_s, _, a_loss, c_loss, _, entropy, kl, last_lr, lr_mul = epoch.result
        times, losses = (step_s, play_s, update_s), (a_loss, c_loss, entropy, kl, last_lr, lr_mul)
        scaled = (epoch.update_s, play_s, epoch.frames)  # scaled time, play time, curr_frames
        agent.write_stats(elapsed_s, agent.epoch_num, *times, *losses, agent.frame, *scaled)

    def save_best(self, reward: float) -> None:
        """Save ``reward``'s checkpoint as the best (``nn/<name>``) when it beats the best so
        far after ``save_best_after`` epochs. Above ``score_to_win`` it ends the run."""
        agent = self.agent
        if not (reward > agent.last_mean_rewards and agent.epoch_num >= agent.save_best_after):
            return  # (a NaN reward never improves)
        agent.last_mean_rewards = reward
        agent.save(os.path.join(agent.nn_dir, agent.config["name"]))
        win = agent.config.get("score_to_win")
        if win is not None and reward > win:
            say(f"score_to_win {win} reached: {reward:.2f}")
            self.ended_by = self.ended_by or "score_to_win"

    def save_every_few_epochs(self) -> None:
        """``nn/last_<name>_ep_<epoch>`` every ``save_frequency`` epochs (0: never)."""
        agent = self.agent
        epoch = agent.epoch_num
        if agent.save_freq > 0 and epoch % agent.save_freq == 0:
            agent.save(os.path.join(agent.nn_dir, f"last_{agent.config['name']}_ep_{epoch}"))

    def limit_reached(self) -> bool:
        """Whether this trainer's run is over: score to win (seen by :meth:`save_best`), max
        epochs or max frames (-1: none) reached."""
        agent = self.agent
        if agent.max_epochs != -1 and agent.epoch_num >= agent.max_epochs:
            self.ended_by = self.ended_by or "max_epochs"
        if agent.max_frames != -1 and agent.frame >= agent.max_frames:
            self.ended_by = self.ended_by or "max_frames"
        return self.ended_by is not None

    def save_last(self) -> str | None:
        """The lead's closing checkpoint, ``nn/last_<name>_ep_<epoch>_rew_<mean reward>.pth``
        (``_`` for no reward yet); its path, None on other trainers."""
        if not self.lead:
            return None
        agent = self.agent
        reward = "_" if self.mean_reward is None else f"{self.mean_reward:.2f}"
        name = f"last_{agent.config['name']}_ep_{agent.epoch_num}_rew_{reward}"
        path = os.path.join(agent.nn_dir, name)
        agent.save(path)
        return path + ".pth"
