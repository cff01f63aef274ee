"""IsaacGymEnvs' ``VecTask`` interface over our physics backends: everything the learner sees is
a torch tensor on ``rl_device``; buffers cross to and from JAX under :mod:`.handoff`'s rule."""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from typing import Any, Literal

import gymnasium as gym
import jax
import numpy as np
import torch

from isaacgymenvs_gmi.config.debug import DebugSettings
from isaacgymenvs_gmi.config.randomization import RandomizationSettings
from isaacgymenvs_gmi.config.task_env import TaskEnvSettings
from isaacgymenvs_gmi.tasks import get_task_class
from isaacgymenvs_gmi.tasks.base import ModelInfo

from .gymnasium_view import GymnasiumView
from .handoff import HandOffs
from .model import compile_task_model
from .noise import EnvNoise
from .render import OffscreenRenderer
from .step_logic import StepLogic, StepOutput
from .video import VideoRecorder
from .world_params import WorldParams

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PhysicsOptions:
    """How to simulate: backend, MJX implementation, threads, optional IsaacGymEnvs assets."""

    backend: Literal["mujoco", "mjx"] = "mujoco"
    mjx_impl: Literal["jax", "warp"] = "jax"
    num_threads: int | None = None  # MuJoCo C worker threads; None = the cores we may run on
    assets_root: str | None = None


def available_cores() -> int:
    """Cores this process may run on (its affinity mask: a GMI's own core set)."""
    return len(os.sched_getaffinity(0))


def _key_of(config: dict[str, Any]) -> bytes:
    """The task config as bytes: with the model, all the backend's step logic is built from."""
    return json.dumps(config, sort_keys=True, default=repr).encode()


def _jax_device_for(sim_device: str) -> jax.Device:
    if sim_device.startswith("cuda"):
        index = int(sim_device.split(":")[1]) if ":" in sim_device else 0
        return jax.devices("gpu")[index]
    return jax.devices("cpu")[0]


class VecTask:
    """A batch of ``num_envs`` worlds of one task with IsaacGymEnvs' VecTask API.

    ``step(actions (N, A)) -> (obs_dict {'obs': (N, num_obs)}, rew (N,), reset (N,) long,
    extras {'time_outs': (N,) bool, 'episode_return', 'episode_length'})``, all on rl_device.

    ``states_for_critic``: also publish ``obs_dict['states']`` (N, num_states); a task without
    privileged states hands the critic the actor's observations. ``debug``: ``gmi.debug.*``.
    """

    def __init__(
        self,
        config: dict[str, Any],
        rl_device: str,
        sim_device: str,
        graphics_device_id: int = -1,
        headless: bool = True,
        virtual_screen_capture: bool = False,
        force_render: bool = False,
        *,
        physics: PhysicsOptions | None = None,
        seed: int = 0,
        states_for_critic: bool = False,
        debug: DebugSettings | None = None,
    ):
        physics = physics or PhysicsOptions()
        debug = debug or DebugSettings()
        self.cfg = config
        env_cfg = config["env"]
        task_cls = get_task_class(config["name"])
        task_cls.check_config(env_cfg)
        model, timing = compile_task_model(task_cls, config, physics.assets_root)
        self.task = task_cls(env_cfg, timing.dt, ModelInfo.from_model(model))
        self.model = model  # the task's compiled model (every world's, before randomisation)
        self.video: VideoRecorder | None = None  # env 0 on video: attach_video
        self._renderer: OffscreenRenderer | None = None  # render()'s, made on its first call
        settings = TaskEnvSettings.from_task_config(config)  # ConfigError naming the key
        self.num_environments = settings.num_envs
        self.num_agents = 1
        self.num_observations = self.task.num_obs
        self.num_states = self.task.num_states
        self._states_from_obs = states_for_critic and self.num_states == 0
        if self._states_from_obs:
            self.num_states = self.task.num_obs
        self.num_actions = self.task.num_actions
        self.max_episode_length = self.task.max_episode_length
        self.control_freq_inv = timing.control_freq_inv
        self.dt = timing.dt
        self.clip_obs = settings.clip_obs
        self.clip_actions = settings.clip_actions
        if not settings.clip_actions_given:
            log.info("%s: task.env.clipActions not set: actions are not clipped", config["name"])
        self.sim_device = sim_device
        self.rl_device = rl_device
        self.device = sim_device  # IsaacGymEnvs' name for the simulation device
        self.graphics_device_id = graphics_device_id
        self.headless = headless
        self._torch_rl_device = torch.device(rl_device)
        self.handoffs = HandOffs(
            self._torch_rl_device, sync=debug.sync, bare=debug.handoffs == "bare"
        )
        fps = max(1, round(1.0 / (self.dt * self.control_freq_inv)))  # env steps per second
        self.render_mode = "rgb_array"  # what render() draws (gymnasium's RecordVideo reads it)
        self.metadata = {  # gymnasium's keys and old gym's, for either RecordVideo
            "render_modes": ["rgb_array"],
            "render_fps": fps,
            "render.modes": ["rgb_array"],
            "video.frames_per_second": fps,
        }

        self.obs_space = gym.spaces.Box(-np.inf, np.inf, (self.num_obs,), np.float32)
        self.state_space = gym.spaces.Box(-np.inf, np.inf, (max(self.num_states, 0),), np.float32)
        self.act_space = gym.spaces.Box(-1.0, 1.0, (self.num_actions,), np.float32)

        logic = StepLogic(self.task, self.num_envs, self.clip_obs, self.clip_actions)
        self.physics_options = physics
        randomization = RandomizationSettings.from_task_config(config)
        self.world_params = first = None  # per-world physics of task.task.randomize; None: off
        if randomization is not None and randomization.physics:
            self.world_params = WorldParams(
                randomization, model, task_cls.actors, self.num_envs, seed
            )
            first = self.world_params.first()
        if physics.backend == "mujoco":
            from .mujoco_backend import MujocoBackend

            threads = physics.num_threads or available_cores()
            self.backend = MujocoBackend(logic, model, timing.nstep, threads, seed, first)
        else:
            from .mjx_backend import MjxBackend

            device = _jax_device_for(sim_device)
            self.backend = MjxBackend(
                logic, model, timing.nstep, seed, physics.mjx_impl, device, first, _key_of(config)
            )

        self.noise = (  # observation and action noise of task.task.randomize; None: off
            EnvNoise(randomization, seed)
            if randomization and (randomization.observations or randomization.actions)
            else None
        )
        self.total_train_env_frames = 0
        self.control_steps = 0
        self.handoff_s = 0.0  # seconds spent handing buffers between torch and JAX, so far
        self.extras: dict[str, Any] = {}
        self.obs_dict: dict[str, torch.Tensor] = {}
        zeros = torch.zeros(self.num_envs, device=self._torch_rl_device)
        self.rew_buf = zeros.clone()
        self.reset_buf = zeros.long()
        self.timeout_buf = zeros.bool()
        self.obs_buf = self.handoffs.to_torch(self.backend.reset())
        self._set_obs(self.obs_buf)
        log.info(
            "%s: %d envs, %s backend, %d obs / %d actions, %d physics steps of %.4g s per env step",
            self.task.name,
            self.num_envs,
            physics.backend,
            self.num_obs,
            self.num_actions,
            timing.nstep,
            timing.timestep,
        )

    # --- IsaacGymEnvs VecTask API -----------------------------------------------------------
    @property
    def num_envs(self) -> int:
        return self.num_environments

    @property
    def num_obs(self) -> int:
        return self.num_observations

    @property
    def num_acts(self) -> int:
        return self.num_actions

    @property
    def observation_space(self) -> gym.Space:
        return self.obs_space

    @property
    def action_space(self) -> gym.Space:
        return self.act_space

    @property
    def progress_buf(self) -> torch.Tensor:
        return self.handoffs.to_torch(self.backend.progress).long()

    @property
    def states_buf(self) -> torch.Tensor | None:
        return self.obs_dict.get("states")

    def step(self, actions: torch.Tensor):
        if self.noise is not None:
            actions = self.noise.on_actions(actions)  # before the backend clips them
        start = time.perf_counter()
        handed = self._actions_for_backend(actions)
        stepping = time.perf_counter()
        out = self.backend.step(handed)
        stepped = time.perf_counter()
        if not isinstance(out, StepOutput):
            self.handoffs.stepped(out)
        self.control_steps += 1
        result = self._publish(out)
        self.handoff_s += (stepping - start) + (time.perf_counter() - stepped)
        physics_steps = self.control_steps * self.control_freq_inv
        if self.video is not None and self.video.wants(self.control_steps):
            qpos, qvel = self.backend.physics_state()
            ended = bool(self.reset_buf[0])
            self.video.add(self.control_steps, qpos[0], qvel[0], episode_ended=ended)
        if self.world_params is not None:
            update = self.world_params.after_step(physics_steps, self._finished)
            if update is not None:
                self.backend.apply_world(update)
        if self.noise is not None:
            self.obs_buf = self.noise.on_observations(self.obs_buf, self.clip_obs)
            self._set_obs(self.obs_buf)
            self.noise.advance(physics_steps)
        return result

    def _finished(self) -> np.ndarray:
        """(N,) bool: envs whose episode ended at the last step."""
        return self.reset_buf.cpu().numpy() != 0

    def reset(self) -> dict[str, torch.Tensor]:
        """The current observations (envs reset themselves as their episodes end)."""
        return self.obs_dict

    def reset_done(self):
        return self.obs_dict, torch.zeros(0, dtype=torch.long, device=self._torch_rl_device)

    def zero_actions(self) -> torch.Tensor:
        return torch.zeros((self.num_envs, self.num_actions), device=self._torch_rl_device)

    def set_train_info(self, env_frames, *args, **kwargs) -> None:
        self.total_train_env_frames = env_frames

    def get_env_state(self) -> None:
        return None

    def set_env_state(self, env_state) -> None:
        pass

    def episode_totals(self) -> tuple[float | None, float | None]:
        """Mean return and length of every episode finished so far (None before the first)."""
        total_return, total_length, count = np.asarray(self.backend.totals).tolist()
        if count == 0:
            return None, None
        return total_return / count, total_length / count

    def render(self, mode: str = "rgb_array") -> np.ndarray | None:
        """Env 0 now, drawn headless: a fresh (480, 640, 3) uint8 image, top row first; None for
        ``mode="human"`` (no viewer). Raises :class:`~.render.RendererUnavailable` without
        OpenGL."""
        if mode == "human":
            return None
        if mode != "rgb_array":
            raise ValueError(f"render(mode={mode!r}): the modes are 'rgb_array' and 'human'")
        if self._renderer is None:
            self._renderer = OffscreenRenderer(self.model)
        qpos, qvel = self.backend.physics_state()
        return self._renderer.render(qpos[0], qvel[0])

    def compile_programs(self) -> None:
        """Compile (and cache) every program training runs: step, refill, step. The envs' state
        changes: use a throwaway env."""
        self.step(self.zero_actions())
        self.backend.refill_pool()
        self.step(self.zero_actions())

    def as_gymnasium(self) -> GymnasiumView:
        """These envs under gymnasium's ``Env`` API, for its wrappers (``RecordVideo``)."""
        return GymnasiumView(self)

    def attach_video(self, video: VideoRecorder) -> None:
        """Record env 0 from the next step on (``capture_video``)."""
        self.video = video

    def close(self) -> None:
        if self.video is not None:
            self.video.close()
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self.handoffs.close()
        self.backend.close()

    # --- internals --------------------------------------------------------------------------
    def _actions_for_backend(self, actions: torch.Tensor):
        actions = actions.detach()
        if self.physics_options.backend == "mujoco":
            if actions.device.type != "cpu" or actions.dtype != torch.float32:
                actions = actions.to("cpu", torch.float32)
            return actions.numpy()
        return self.handoffs.actions_to_jax(actions)

    def _set_obs(self, obs: torch.Tensor) -> None:
        self.obs_dict["obs"] = obs
        if self._states_from_obs:
            self.obs_dict["states"] = obs

    def _publish(self, packed_out: jax.Array | StepOutput):
        if isinstance(packed_out, StepOutput):
            return self._publish_host(packed_out)
        packed = self.handoffs.to_torch(packed_out)  # (N, num_obs + 5), as StepLogic.pack
        obs, tail = packed.split([self.num_obs, packed.shape[1] - self.num_obs], dim=1)
        reward, reset, timeout, ep_return, ep_length = tail[:, :5].unbind(1)
        return self._set_outputs(obs, reward, reset.long(), timeout > 0.5, ep_return, ep_length)

    def _publish_host(self, out: StepOutput):
        """:meth:`_publish` for numpy outputs (the mujoco backend): fresh tensors every step,
        zero-copy views of the step's own arrays (torch ops cost more here than numpy's)."""
        cpu = self._torch_rl_device.type == "cpu"
        adopt = torch.from_numpy if cpu else self.handoffs.to_torch
        return self._set_outputs(*map(adopt, out._replace(reset=out.reset.astype(np.int64))))

    def _set_outputs(self, obs, reward, reset, timeout, ep_return, ep_length):
        """Publish one step's tensors (on rl_device) as IsaacGymEnvs does."""
        self.obs_buf, self.rew_buf, self.reset_buf, self.timeout_buf = obs, reward, reset, timeout
        self._set_obs(obs)
        self.extras = {
            "time_outs": timeout,
            "episode_return": ep_return,
            "episode_length": ep_length,
        }
        return self.obs_dict, self.rew_buf, self.reset_buf, self.extras
