"""From a composed Hydra config to a training or evaluation run.

:func:`plan_run` checks everything a run depends on and fails with a :class:`ConfigError` naming
the key before any simulator, process or file is created; :func:`run` then executes the plan.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig

from isaacgymenvs_gmi.config import (
    ConfigError,
    GmiConfig,
    SimSettings,
    detect_platform,
    report_ignored_keys,
    resolve_sim_settings,
    validate_train_config,
)
from isaacgymenvs_gmi.tasks import UnknownTaskError, get_task_class

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunPlan:
    """A validated run: what to simulate, where, and how to train."""

    task_name: str
    num_envs: int  # per GMI
    seed: int
    sim: SimSettings
    gmi: GmiConfig
    test: bool
    checkpoint: str | None


@dataclass
class RunResult:
    mean_reward: float | None  # mean return of the episodes finished last (training or play)
    mean_length: float | None
    frames: int
    experiment_dir: str | None
    history: list[tuple[int, float, float]]  # (frame, wall time s, mean reward), training only


def plan_run(
    cfg: DictConfig, platform: tuple[bool, tuple[str, ...], bool] | None = None
) -> RunPlan:
    """Validate ``cfg`` into a :class:`RunPlan` (raises :class:`ConfigError`)."""
    try:
        get_task_class(cfg.task_name)
    except UnknownTaskError as e:
        raise ConfigError("task", cfg.task_name, str(e).split(": ", 1)[1]) from None
    gmi = GmiConfig.from_cfg(cfg.get("gmi"))
    num_envs = cfg.task.env.numEnvs
    validate_train_config(cfg.task_name, num_envs, cfg.train.params)
    cuda, jax_platforms, warp = platform or detect_platform()
    sim = resolve_sim_settings(
        cfg, cuda_available=cuda, jax_platforms=jax_platforms, warp_available=warp
    )
    if gmi.per_gpu * (gmi.num_gpus or 1) > 1:
        raise ConfigError(
            "gmi.per_gpu",
            gmi.per_gpu,
            "this build runs one GMI per run; multi-GMI launch is not available yet",
        )
    if cfg.test and not cfg.checkpoint:
        raise ConfigError("checkpoint", cfg.checkpoint, "test=True needs a checkpoint file to play")
    if cfg.checkpoint and not os.path.isfile(str(cfg.checkpoint)):
        raise ConfigError("checkpoint", cfg.checkpoint, "no such file")
    seed = int(cfg.seed)
    if seed == -1:
        seed = random.randint(0, 10000)
    return RunPlan(
        task_name=cfg.task_name,
        num_envs=int(num_envs),
        seed=seed,
        sim=sim,
        gmi=gmi,
        test=bool(cfg.test),
        checkpoint=str(cfg.checkpoint) or None,
    )


def seed_everything(seed: int, deterministic: bool) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if deterministic:
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True)


def run(cfg: DictConfig, plan: RunPlan | None = None) -> RunResult:
    """Train (or, with ``test=True``, play) as one GMI in this process."""
    from rl_games.torch_runner import Runner

    from isaacgymenvs_gmi.patches import apply_all
    from isaacgymenvs_gmi.rl.observer import EpisodeStatsObserver
    from isaacgymenvs_gmi.rl.train_config import rlgames_params
    from isaacgymenvs_gmi.rl.vecenv import register_env
    from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask, available_cores

    plan = plan or plan_run(cfg)
    report_ignored_keys(cfg, log)
    apply_all()
    seed_everything(plan.seed, bool(cfg.torch_deterministic))
    torch.set_num_threads(available_cores())
    physics = PhysicsOptions(
        backend=plan.sim.backend, mjx_impl=plan.sim.mjx_impl, assets_root=plan.sim.assets_root
    )
    task_cfg: dict[str, Any] = _task_dict(cfg, plan.num_envs)
    envs: list[VecTask] = []

    def create_env(**_: Any) -> VecTask:
        env = VecTask(
            task_cfg,
            plan.sim.rl_device,
            plan.sim.sim_device,
            int(cfg.graphics_device_id),
            bool(cfg.headless),
            physics=physics,
            seed=plan.seed,
        )
        envs.append(env)
        return env

    register_env(create_env)
    params = rlgames_params(
        cfg, rl_device=plan.sim.rl_device, seed=plan.seed, num_envs=plan.num_envs
    )
    log.info(
        "%s: %d envs per GMI, seed %d, %s physics on %s, learner on %s",
        plan.task_name,
        plan.num_envs,
        plan.seed,
        plan.sim.backend,
        plan.sim.sim_device,
        plan.sim.rl_device,
    )
    observer = EpisodeStatsObserver()
    runner = Runner(observer)
    runner.load({"params": params})
    runner.reset()
    runner.run(
        {
            "train": not plan.test,
            "play": plan.test,
            "checkpoint": plan.checkpoint,
            "sigma": None if cfg.sigma == "" else float(cfg.sigma),
        }
    )
    for env in envs:
        env.close()
    algo = observer.algo
    if plan.test:
        played = envs[-1].episode_totals() if envs else (None, None)
        log.info("played %s: mean episode reward %.3f", plan.checkpoint, played[0] or float("nan"))
        print(f"mean episode reward: {played[0]:.3f}, mean episode length: {played[1]:.1f}")
        return RunResult(played[0], played[1], 0, None, [])
    return RunResult(
        mean_reward=observer.mean_reward,
        mean_length=observer.mean_length,
        frames=int(getattr(algo, "frame", 0)),
        experiment_dir=getattr(algo, "experiment_dir", None),
        history=observer.history,
    )


def _task_dict(cfg: DictConfig, num_envs: int) -> dict[str, Any]:
    from omegaconf import OmegaConf

    task = OmegaConf.to_container(cfg.task, resolve=True)
    task["env"]["numEnvs"] = num_envs
    return task
