"""A task class with IsaacGymEnvs' ``VecTask`` interface, run as it is (no MuJoCo, no JAX).

Seen from above the simulator an Isaac Gym task is a batch of envs in torch: IsaacGymEnvs builds it
as ``Task(cfg=task_config, rl_device=, sim_device=, graphics_device_id=, headless=,
virtual_screen_capture=, force_render=)``, and ``step(actions (N, A))`` returns
``(obs_dict {'obs': (N, num_obs)[, 'states': (N, num_states)]}, rew (N,), reset (N,), extras)``
with the envs that ended already reset inside. Any class with that shape (a user's own, or one
from ``isaacgymenvs``' task map) trains under GMIs through :class:`ForeignVecTask`, which adds
what our runners read beyond the interface: each finished episode's return and length in
``extras`` and the mean over all finished episodes.
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
    """Build a small instance of ``cls`` on the CPU to learn its widths before any GMI starts; a
    class that cannot be built with this config is refused naming the task."""
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
    """A VecTask-shaped env (``env``) with per-env episode bookkeeping added.

    ``extras`` of every step gains ``episode_return`` and ``episode_length`` (N,): the totals
    of each env's current episode including this step (final for the envs in ``reset``).
    ``states_for_critic``: publish ``obs_dict['states']`` = the observations when the task has
    no privileged states. Every other attribute is the wrapped env's.
    """

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

    def set_train_info(self, env_frames, *args, **kwargs) -> None:
        own = getattr(self.env, "set_train_info", None)
        if callable(own):
            own(env_frames, *args, **kwargs)

    def get_env_state(self) -> Any:
        own = getattr(self.env, "get_env_state", None)
        return own() if callable(own) else None

    def set_env_state(self, env_state: Any) -> None:
        own = getattr(self.env, "set_env_state", None)
        if callable(own):
            own(env_state)

    def episode_totals(self) -> tuple[float | None, float | None]:
        """Mean return and length of every episode finished so far (None before the first)."""
        total_return, total_length, count = self._totals.cpu().tolist()
        if count == 0:
            return None, None
        return total_return / count, total_length / count

    def as_gymnasium(self) -> GymnasiumView:
        """These envs under gymnasium's ``Env`` API (five-value ``step``); ``render()`` is the
        wrapped env's ``render(mode="rgb_array")``."""
        return GymnasiumView(self)

    def close(self) -> None:
        own = getattr(self.env, "close", None)
        if callable(own):
            own()

    def _with_states(self, obs_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self._states_from_obs:
            return {**obs_dict, "states": obs_dict["obs"]}
        return obs_dict
