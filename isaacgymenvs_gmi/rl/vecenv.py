"""Registration of our VecTask with rl-games under IsaacGymEnvs' names (``env_name: rlgpu``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rl_games.common import env_configurations, vecenv
from rl_games.common.ivecenv import IVecEnv

ENV_NAME = "rlgpu"
VECENV_TYPE = "RLGPU"


class RLGPUEnv(IVecEnv):
    """rl-games' view of a VecTask: already batched, tensors on rl_device."""

    def __init__(self, config_name: str | None, num_actors: int, env: Any = None, **kwargs: Any):
        if env is None:
            env = env_configurations.configurations[config_name]["env_creator"](**kwargs)
        self.env = env

    def step(self, actions):
        return self.env.step(actions)

    def reset(self):
        return self.env.reset()

    def reset_done(self):
        return self.env.reset_done()

    def get_number_of_agents(self) -> int:
        return self.env.num_agents

    def get_env_info(self) -> dict[str, Any]:
        info = {
            "action_space": self.env.action_space,
            "observation_space": self.env.observation_space,
            "agents": self.env.num_agents,
        }
        if self.env.num_states > 0:
            info["state_space"] = self.env.state_space
        return info

    def set_train_info(self, env_frames, *args, **kwargs):
        self.env.set_train_info(env_frames, *args, **kwargs)

    def get_env_state(self):
        return self.env.get_env_state()

    def set_env_state(self, env_state):
        self.env.set_env_state(env_state)


def register_env(create_env: Callable[..., Any]) -> None:
    """Make ``env_name: rlgpu`` in any rl-games train config build envs with ``create_env``."""
    env_configurations.register(
        ENV_NAME, {"vecenv_type": VECENV_TYPE, "env_creator": lambda **kw: create_env(**kw)}
    )
    vecenv.register(VECENV_TYPE, lambda name, num_actors, **kw: RLGPUEnv(name, num_actors, **kw))


def wrap_env(env: Any) -> RLGPUEnv:
    """rl-games' view of a VecTask built by the caller (for an agent given ``vec_env``)."""
    return RLGPUEnv(None, env.num_envs, env=env)
