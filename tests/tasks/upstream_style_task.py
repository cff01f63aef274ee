"""Source text of a torch-only task written the way an IsaacGymEnvs task is written, for tests.

``VEC_TASK_BASE`` is a stand-in for IsaacGymEnvs' ``VecTask`` base class (buffers, spaces and
the ``pre_physics_step -> post_physics_step`` protocol, no simulator); ``POINT_MASS`` subclasses
it like an upstream task does (sets its widths in ``cfg`` before calling the base, resets the
envs flagged last step at the start of ``post_physics_step``). Tests write them into a package
on ``sys.path``: as the stand-in ``isaacgymenvs`` (with its ``isaacgym_task_map``) or as a
user's module that registers the class itself.
"""

from __future__ import annotations

from pathlib import Path

VEC_TASK_BASE = '''
import gymnasium as gym
import numpy as np
import torch


class VecTask:
    """Stand-in for IsaacGymEnvs' VecTask base: buffers and the step protocol in torch."""

    def __init__(self, config, rl_device, sim_device, graphics_device_id, headless,
                 virtual_screen_capture=False, force_render=False):
        self.cfg = config
        self.rl_device, self.device = rl_device, sim_device
        env = config["env"]
        self.num_envs = int(env["numEnvs"])
        self.num_obs = int(env["numObservations"])
        self.num_states = int(env.get("numStates", 0))
        self.num_actions = int(env["numActions"])
        self.max_episode_length = int(env.get("episodeLength", 100))
        self.clip_obs = float(env.get("clipObservations", np.inf))
        self.clip_actions = float(env.get("clipActions", np.inf))
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (self.num_obs,))
        self.action_space = gym.spaces.Box(-1.0, 1.0, (self.num_actions,))
        self.state_space = gym.spaces.Box(-np.inf, np.inf, (self.num_states,))
        n, dev = self.num_envs, self.device
        self.obs_buf = torch.zeros(n, self.num_obs, device=dev)
        self.rew_buf = torch.zeros(n, device=dev)
        self.reset_buf = torch.ones(n, dtype=torch.long, device=dev)
        self.timeout_buf = torch.zeros(n, dtype=torch.long, device=dev)
        self.progress_buf = torch.zeros(n, dtype=torch.long, device=dev)
        self.extras = {}
        self.create_sim()

    def get_number_of_agents(self):
        return 1

    def step(self, actions):
        clipped = torch.clamp(actions, -self.clip_actions, self.clip_actions).to(self.device)
        self.pre_physics_step(clipped)
        self.post_physics_step()
        ended = self.progress_buf >= self.max_episode_length - 1
        self.timeout_buf = (ended & (self.reset_buf != 0)).long()
        self.extras["time_outs"] = self.timeout_buf.to(self.rl_device)
        obs = torch.clamp(self.obs_buf, -self.clip_obs, self.clip_obs).to(self.rl_device)
        rew, reset = self.rew_buf.to(self.rl_device), self.reset_buf.to(self.rl_device)
        return {"obs": obs}, rew, reset, self.extras

    def reset(self):
        self.reset_idx(torch.arange(self.num_envs, device=self.device))
        self.compute_observations()
        obs = torch.clamp(self.obs_buf, -self.clip_obs, self.clip_obs).to(self.rl_device)
        return {"obs": obs}
'''

POINT_MASS = '''
import torch

from {base_module} import VecTask


class PointMass(VecTask):
    """A 2-D point pushed by a bounded force towards the origin (no simulator: Euler steps)."""

    def __init__(self, cfg, rl_device, sim_device, graphics_device_id, headless,
                 virtual_screen_capture, force_render):
        self.cfg = cfg
        self.dt = float(cfg["sim"]["dt"])
        self.max_push = float(cfg["env"]["maxPush"])
        cfg["env"]["numObservations"] = 4
        cfg["env"]["numActions"] = 2
        super().__init__(config=cfg, rl_device=rl_device, sim_device=sim_device,
                         graphics_device_id=graphics_device_id, headless=headless,
                         virtual_screen_capture=virtual_screen_capture,
                         force_render=force_render)

    def create_sim(self):
        self.pos = torch.zeros(self.num_envs, 2, device=self.device)
        self.vel = torch.zeros(self.num_envs, 2, device=self.device)
        self.force = torch.zeros(self.num_envs, 2, device=self.device)

    def pre_physics_step(self, actions):
        self.force = actions * self.max_push

    def post_physics_step(self):
        env_ids = self.reset_buf.nonzero(as_tuple=False).squeeze(-1)
        if len(env_ids) > 0:
            self.reset_idx(env_ids)
        self.vel = self.vel + self.dt * self.force
        self.pos = self.pos + self.dt * self.vel
        self.progress_buf += 1
        self.compute_observations()
        self.compute_reward()

    def compute_observations(self):
        self.obs_buf[:] = torch.cat([self.pos, self.vel], dim=-1)

    def compute_reward(self):
        distance = torch.linalg.norm(self.pos, dim=-1)
        self.rew_buf[:] = -distance - 0.01 * (self.force**2).sum(-1)
        out = distance > 4.0
        ended = self.progress_buf >= self.max_episode_length - 1
        self.reset_buf[:] = (out | ended).long()

    def reset_idx(self, env_ids):
        n = len(env_ids)
        self.pos[env_ids] = 2.0 * (torch.rand(n, 2, device=self.device) - 0.5)
        self.vel[env_ids] = 0.0
        self.progress_buf[env_ids] = 0
        self.reset_buf[env_ids] = 0
'''

TASK_YAML = """\
name: {name}
physics_engine: ${{..physics_engine}}
env:
  numEnvs: ${{resolve_default:256,${{...num_envs}}}}
  episodeLength: 32
  maxPush: 2.0
  clipObservations: 5.0
  clipActions: 1.0
sim:
  dt: 0.05
"""


def write_standin_isaacgymenvs(root: Path) -> None:
    """``root/isaacgymenvs``: a stand-in for IsaacGymEnvs with PointMass in its task map."""
    tasks = root / "isaacgymenvs" / "tasks"
    (tasks / "base").mkdir(parents=True)
    (root / "isaacgymenvs" / "__init__.py").write_text('"""Stand-in for IsaacGymEnvs."""\n')
    (tasks / "base" / "__init__.py").write_text("")
    (tasks / "base" / "vec_task.py").write_text(VEC_TASK_BASE)
    (tasks / "point_mass.py").write_text(
        POINT_MASS.format(base_module="isaacgymenvs.tasks.base.vec_task")
    )
    (tasks / "__init__.py").write_text(
        "from .point_mass import PointMass\n\nisaacgym_task_map = {'PointMass': PointMass}\n"
    )


def write_user_module(root: Path, name: str) -> None:
    """``root/my_torch_tasks``: a user's package registering PointMass as ``name``."""
    pkg = root / "my_torch_tasks"
    pkg.mkdir(parents=True)
    (pkg / "vec_task.py").write_text(VEC_TASK_BASE)
    (pkg / "point_mass.py").write_text(POINT_MASS.format(base_module="my_torch_tasks.vec_task"))
    (pkg / "__init__.py").write_text(
        "from isaacgymenvs_gmi import register_task\n\nfrom .point_mass import PointMass\n\n"
        f"register_task({name!r}, PointMass)\n"
    )


def write_configs(cfg_dir: Path, name: str, train_template: Path) -> None:
    """``cfg_dir/task/<name>.yaml`` and ``cfg_dir/train/<name>PPO.yaml`` (from a template)."""
    (cfg_dir / "task").mkdir(parents=True, exist_ok=True)
    (cfg_dir / "train").mkdir(parents=True, exist_ok=True)
    (cfg_dir / "task" / f"{name}.yaml").write_text(TASK_YAML.format(name=name))
    train = train_template.read_text().replace(
        "resolve_default:Cartpole", f"resolve_default:{name}"
    )
    train = train.replace("minibatch_size: 8192", "minibatch_size: 1024")
    (cfg_dir / "train" / f"{name}PPO.yaml").write_text(train)
