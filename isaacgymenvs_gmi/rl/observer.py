"""rl-games observers: finished episodes' reward and length to TensorBoard, and a chain."""

from __future__ import annotations

import torch
from rl_games.common.algo_observer import AlgoObserver


class EpisodeStatsObserver(AlgoObserver):
    """Averages ``extras['episode_return'/'episode_length']`` of episodes that ended into
    ``episode/reward`` and ``episode/length`` (per frame, epoch and wall time) each time rl-games
    writes its statistics; keeps the latest means (``mean_reward``) for the progress line."""

    def __init__(self) -> None:
        super().__init__()
        self.algo = self.writer = None
        self._sums = torch.zeros(2, dtype=torch.float64)
        self._count = 0
        self.mean_reward: float | None = None
        self.mean_length: float | None = None
        self.history: list[tuple[int, float, float]] = []  # (frame, wall time s, mean reward)

    def after_init(self, algo) -> None:
        self.algo = algo
        self.writer = getattr(algo, "writer", None)

    def process_infos(self, infos, done_indices) -> None:
        if not isinstance(infos, dict) or "episode_return" not in infos:
            return
        idx = done_indices.flatten()
        if idx.numel() == 0:
            return
        returns = infos["episode_return"][idx].double()
        lengths = infos["episode_length"][idx].double()
        self._sums += torch.stack([returns.sum(), lengths.sum()]).cpu()
        self._count += int(idx.numel())

    def after_clear_stats(self) -> None:
        self._sums.zero_()
        self._count = 0

    def after_print_stats(self, frame, epoch_num, total_time) -> None:
        if self._count == 0:
            return
        reward, length = (self._sums / self._count).tolist()
        self.after_clear_stats()
        self.mean_reward, self.mean_length = reward, length
        self.history.append((int(frame), float(total_time), reward))
        if self.writer is not None:
            for tag, value in (("episode/reward", reward), ("episode/length", length)):
                self.writer.add_scalar(tag, value, frame)
                self.writer.add_scalar(f"{tag}_per_epoch", value, epoch_num)
                self.writer.add_scalar(f"{tag}_per_time", value, total_time)


class ObserverChain(AlgoObserver):
    """Hands every rl-games observer call to each of ``observers`` that has the hook, in order
    (rl-games' base class lacks some hooks, e.g. ``after_clear_stats``)."""

    def __init__(self, *observers: AlgoObserver) -> None:
        super().__init__()
        self.observers = observers

    def _each(self, hook: str, *args) -> None:
        for o in self.observers:
            method = getattr(o, hook, None)
            if method is not None:
                method(*args)

    def before_init(self, base_name, config, experiment_name) -> None:
        self._each("before_init", base_name, config, experiment_name)

    def after_init(self, algo) -> None:
        self._each("after_init", algo)

    def process_infos(self, infos, done_indices) -> None:
        self._each("process_infos", infos, done_indices)

    def after_steps(self) -> None:
        self._each("after_steps")

    def after_clear_stats(self) -> None:
        self._each("after_clear_stats")

    def after_print_stats(self, frame, epoch_num, total_time) -> None:
        self._each("after_print_stats", frame, epoch_num, total_time)
