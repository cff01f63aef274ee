"""The Python entry points, for pipelines that do not go through ``train.py``: :func:`make`, with
the shape of ``isaacgymenvs.make``, and :func:`run`, which runs a composed config as ``train.py``
would and returns GMI 0's result.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from isaacgymenvs_gmi.config import register_resolvers
from isaacgymenvs_gmi.config.compose import compose_config
from isaacgymenvs_gmi.config.sim import detect_platform, resolve_sim_settings
from isaacgymenvs_gmi.console import quiet_console
from isaacgymenvs_gmi.launch import RunResult, plan_run
from isaacgymenvs_gmi.launch import run as launch_run
from isaacgymenvs_gmi.planner import resolve_auto
from isaacgymenvs_gmi.runners.shared.seeding import seed_everything
from isaacgymenvs_gmi.sim.envs import make_env
from isaacgymenvs_gmi.sim.task_choice import load_task_modules
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions


def make(
    seed: int,
    task: str,
    num_envs: int,
    sim_device: str,
    rl_device: str,
    graphics_device_id: int = -1,
    headless: bool = False,
    multi_gpu: bool = False,
    virtual_screen_capture: bool = False,
    force_render: bool = True,
    cfg: DictConfig | None = None,
    overrides: Sequence[str] = (),
) -> Any:
    """A VecTask of ``num_envs`` envs of ``task``, as ``isaacgymenvs.make`` returns.

    Args:
        seed: seeds torch, numpy, Python and the task's own generator.
        task: a task name (the suite, registered, or installed ones).
        num_envs: replaces the task file's ``numEnvs``.
        sim_device, rl_device: ``cuda:N`` or ``cpu``; CUDA falls back to the CPU without a GPU.
        graphics_device_id, virtual_screen_capture, force_render: accepted, nothing rendered.
        headless: passed to the env.
        multi_gpu: both devices become ``cuda:<LOCAL_RANK>``, as upstream does under torchrun.
        cfg: a composed top-level config to take the task from (``cfg.task``), as upstream's
            ``cfg`` argument; ``task`` then only names it.
        overrides: more ``train.py`` overrides when composing (``sim_backend=mjx``, ...).

    Returns:
        an env with IsaacGymEnvs' VecTask API: ``step(actions (N, A))`` ->
        ``(obs_dict {'obs': (N, num_obs)}, rew (N,), reset (N,), extras)``.
    """
    del graphics_device_id, virtual_screen_capture, force_render  # nothing is rendered
    if multi_gpu:
        local = int(os.environ.get("LOCAL_RANK", "0"))
        sim_device = rl_device = f"cuda:{local}"
    if cfg is None:
        cfg = compose_config(f"task={task}", *overrides)
    cfg = copy.deepcopy(cfg)  # the caller's config stays as it was; nodes re-parented
    OmegaConf.set_struct(cfg, False)
    cfg.sim_device, cfg.rl_device, cfg.num_envs, cfg.seed = sim_device, rl_device, num_envs, seed
    load_task_modules(cfg.get("task_modules"))
    cuda, jax_platforms, warp = detect_platform()
    sim = resolve_sim_settings(
        cfg, cuda_available=cuda, jax_platforms=jax_platforms, warp_available=warp
    )
    task_config = OmegaConf.to_container(cfg.task, resolve=True)
    task_config["env"]["numEnvs"] = int(num_envs)
    seed_everything(int(seed), bool(cfg.get("torch_deterministic", False)))
    physics = PhysicsOptions(sim.backend, sim.mjx_impl, assets_root=sim.assets_root)
    return make_env(
        task_config,
        sim.rl_device,
        sim.sim_device,
        physics=physics,
        seed=int(seed),
        headless=headless,
    )


def run(cfg: DictConfig) -> RunResult | None:
    """Train (or, with ``test=True``, play) the composed top-level config ``cfg``.

    Raises :class:`~isaacgymenvs_gmi.config.ConfigError` naming the key before anything starts,
    and what ``train.py`` reports as a failed or stopped run (``GmiFailure``, ...) after."""
    register_resolvers()
    with quiet_console():
        cfg = resolve_auto(cfg)  # gmi.per_gpu=auto / num_envs=auto: searched or from the cache
        return launch_run(cfg, plan_run(cfg))
