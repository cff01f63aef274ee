"""A VecTask seen through gymnasium's ``Env`` API, so that gymnasium's wrappers take it.

IsaacGymEnvs' ``step`` returns old gym's four values (obs, reward, reset, extras), which rl-games
reads; gymnasium (1.x) wrappers such as ``RecordVideo`` want five (obs, reward, terminated,
truncated, info) and ``reset`` -> (obs, info). :class:`GymnasiumView` is that ``Env`` over the
same envs, nothing copied: ``truncated`` is ``extras['time_outs']``, ``terminated`` the other
resets.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import torch


class GymnasiumView(gymnasium.Env):
    """``vec_task``'s N envs as one ``gymnasium.Env`` (torch tensors on its rl_device).

    ``step(actions (N, A)) -> (obs_dict {'obs': (N, num_obs)}, reward (N,), terminated (N,)
    bool, truncated (N,) bool, extras)``; ``render()`` -> env 0 as (H, W, 3) uint8."""

    render_mode = "rgb_array"

    def __init__(self, vec_task: Any):
        self.vec_task = vec_task
        metadata = dict(getattr(vec_task, "metadata", None) or {})
        fps = metadata.get("render_fps", metadata.get("video.frames_per_second", 30))
        self.metadata = {**metadata, "render_modes": ["rgb_array"], "render_fps": fps}

    def __getattr__(self, name: str) -> Any:  # only for names this class does not define
        vec_task = self.__dict__.get("vec_task")
        if vec_task is None:
            raise AttributeError(name)
        return getattr(vec_task, name)

    @property
    def observation_space(self) -> gymnasium.Space:
        return self.vec_task.observation_space

    @property
    def action_space(self) -> gymnasium.Space:
        return self.vec_task.action_space

    def step(self, actions: torch.Tensor):
        obs_dict, reward, reset, extras = self.vec_task.step(actions)
        done = reset.bool()
        time_outs = (extras or {}).get("time_outs")
        truncated = torch.zeros_like(done) if time_outs is None else time_outs.bool() & done
        return obs_dict, reward, done & ~truncated, truncated, extras

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """The current observations (the envs reset themselves); ``seed`` is refused."""
        del options
        if seed is not None:
            raise ValueError(
                f"reset(seed={seed!r}): the envs are seeded when built (make(seed=...)); "
                "they cannot be seeded again"
            )
        return self.vec_task.reset(), {}

    def render(self) -> np.ndarray | None:
        return self.vec_task.render(mode="rgb_array")

    def close(self) -> None:
        self.vec_task.close()
