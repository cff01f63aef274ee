"""A task class with IsaacGymEnvs' ``VecTask`` interface, run as it is (no MuJoCo, no JAX).

IsaacGymEnvs builds such a task as ``Task(cfg=task_config, rl_device=, sim_device=,
graphics_device_id=, headless=, virtual_screen_capture=, force_render=)``; ``step(actions (N, A))``
returns ``(obs_dict {'obs': (N, num_obs)[, 'states': (N, num_states)]}, rew (N,), reset (N,),
extras)`` with ended envs already reset. :class:`ForeignVecTask` adds what our runners read
beyond that: each finished episode's return and length, and their means.
"""

from __future__ import annotations

import logging
from typing import Any

import torch

from isaacgymenvs_gmi.config.errors import ConfigError

from .gymnasium_view import GymnasiumView
from .preflight import TaskFootprint

log = logging.getLogger(__name__)
PREFLIGHT_ENVS = 2  # envs of the throw-away instance that measures a task's widths


def build_vec_task(
    cls: type, task_config: dict[str, Any], rl_device: str, sim_device: str, headless: bool = True
) -> Any:
    """An instance of ``cls`` built with IsaacGymEnvs' keyword arguments."""
    return cls(
        cfg=task_config,
        rl_device=rl_device,
        sim_device=sim_device,
        graphics_device_id=-1,
        headless=headless,
        virtual_screen_capture=False,
        force_render=False,
    )


def preflight_vec_task(cls: type, task_config: dict[str, Any]) -> TaskFootprint:
    """Widths of ``cls`` from a small instance built on the CPU (ConfigError naming the task
    when it cannot be built)."""
    small = {**task_config, "env": {**task_config["env"], "numEnvs": PREFLIGHT_ENVS}}
    name = task_config.get("name")
    try:
        env = build_vec_task(cls, small, "cpu", "cpu")
        widths = (int(env.num_obs), int(getattr(env, "num_states", 0) or 0), int(env.num_actions))
        close = getattr(env, "close", None)
        if callable(close):
            close()
    except Exception as err:  # noqa: BLE001 - whatever the user's class raises is reported
        raise ConfigError(
            "task", name, f"{cls.__module__}.{cls.__qualname__} could not be built: {err!r}"
        ) from err
    return TaskFootprint(*widths, physics_state_values=0)


class ForeignVecTask:
    """A VecTask-shaped ``env`` (other attributes are its own) whose step ``extras`` gain
    ``episode_return`` and ``episode_length`` (N,) including this step. ``states_for_critic``:
    ``obs_dict['states']`` = the observations when the task has no privileged states."""

    def __init__(self, env: Any, states_for_critic: bool = False):
        self.env = env
        self.num_envs = int(env.num_envs)
        self.num_obs = int(env.num_obs)
        self.num_actions = int(env.num_actions)
        self.num_states = int(getattr(env, "num_states", 0) or 0)
        agents = getattr(env, "get_number_of_agents", None)
        self.num_agents = int(agents()) if callable(agents) else 1
        self._states_from_obs = states_for_critic and self.num_states == 0
        if self._states_from_obs:
            self.num_states = self.num_obs
        self.device = torch.device(getattr(env, "rl_device", "cpu"))
        self._return = torch.zeros(self.num_envs, device=self.device)
        self._length = torch.zeros(self.num_envs, device=self.device)
        self._totals = torch.zeros(3, dtype=torch.float64, device=self.device)  # ret, len, n

    def __getattr__(self, name: str) -> Any:  # only for names this class does not define
        env = self.__dict__.get("env")
        if env is None:
            raise AttributeError(name)
        return getattr(env, name)

    @property
    def state_space(self) -> Any:
        return self.env.observation_space if self._states_from_obs else self.env.state_space

    def step(self, actions: torch.Tensor):
        obs_dict, reward, reset, extras = self.env.step(actions)
        self._return += reward.to(self.device, torch.float32)
        self._length += 1
        extras = dict(extras or {})
        extras["episode_return"] = self._return.clone()
        extras["episode_length"] = self._length.clone()
        done = reset.to(self.device).bool()
        ended = done.to(torch.float64)  # masked sums: no host sync per step (.any() would)
        self._totals += torch.stack(
            [(self._return * ended).sum(), (self._length * ended).sum(), ended.sum()]
        )
        self._return.masked_fill_(done, 0.0)
        self._length.masked_fill_(done, 0.0)
        return self._with_states(obs_dict), reward, reset, extras

    def reset(self) -> dict[str, torch.Tensor]:
        return self._with_states(self.env.reset())

    def reset_done(self):
        own = getattr(self.env, "reset_done", None)
        if callable(own):
            obs_dict, done = own()
            return self._with_states(obs_dict), done
        return self.reset(), torch.zeros(0, dtype=torch.long, device=self.device)

    def _call_own(self, name: str, *args, **kwargs) -> Any:
        """The wrapped env's method ``name`` called with the arguments (None if it has none)."""
        own = getattr(self.env, name, None)
        return own(*args, **kwargs) if callable(own) else None

    def set_train_info(self, env_frames, *args, **kwargs) -> None:
        self._call_own("set_train_info", env_frames, *args, **kwargs)

    def get_env_state(self) -> Any:
        return self._call_own("get_env_state")

    def set_env_state(self, env_state: Any) -> None:
        self._call_own("set_env_state", env_state)

    def episode_totals(self) -> tuple[float | None, float | None]:
        """Mean return and length of every episode finished so far (None before the first)."""
        total_return, total_length, count = self._totals.cpu().tolist()
        if count == 0:
            return None, None
        return total_return / count, total_length / count

    def as_gymnasium(self) -> GymnasiumView:
        """These envs under gymnasium's ``Env`` API."""
        return GymnasiumView(self)

    def close(self) -> None:
        self._call_own("close")

    def _with_states(self, obs_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self._states_from_obs:
            return {**obs_dict, "states": obs_dict["obs"]}
        return obs_dict
