"""Episode counters in host memory, for a backend whose step results land there: the
bookkeeping of :meth:`StepLogic.finish_step` in numpy (cheaper right after MuJoCo's physics than
carrying these buffers through the jitted step).
"""

from __future__ import annotations

import numpy as np

from .step_logic import StepOutput


class HostEpisodes:
    """Progress and return of N envs' current episodes, and totals of the finished ones."""

    def __init__(self, num_envs: int, timeout_steps: int):
        self.timeout_steps = int(timeout_steps)  # the task's TaskLogic.timeout_steps
        self.progress = np.zeros(num_envs, np.int32)  # (N,) steps taken in the episode
        self.episode_return = np.zeros(num_envs, np.float32)  # (N,) undiscounted reward so far
        self.totals = np.zeros(3)  # summed return and length of finished episodes, their count

    def advance(
        self, obs: np.ndarray, reward: np.ndarray, terminated: np.ndarray
    ) -> tuple[StepOutput, np.ndarray]:
        """Count one step with reward (N,) float32 and termination (N,) bool (episodes at the
        length limit time out). Returns the step's numpy :class:`StepOutput` (``obs`` (N,
        num_obs) passed through, ``episode_length`` float32) and the indices (k,) of the
        finished envs, whose counters restart."""
        self.progress += 1
        self.episode_return += reward
        timeout = self.progress >= self.timeout_steps
        done = terminated | timeout
        finished = np.flatnonzero(done)
        episode_return = np.zeros_like(self.episode_return)
        episode_length = np.zeros(len(done), np.float32)
        if finished.size:
            episode_return[finished] = self.episode_return[finished]
            episode_length[finished] = self.progress[finished]
            self.totals += (episode_return.sum(), episode_length.sum(), finished.size)
            self.progress[finished] = 0
            self.episode_return[finished] = 0.0
        out = StepOutput(obs, np.array(reward), done, timeout, episode_return, episode_length)
        return out, finished
