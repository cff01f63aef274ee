"""From a composed Hydra config to a run: validate everything, then train on one or more GMIs.

:func:`plan_run` checks everything a run depends on and fails with a :class:`ConfigError` naming
the key before any simulator, process or file is created. :func:`run` executes the plan: in this
process for one GMI, as this rank's GMI under ``torchrun``, or through the GMI launcher.
:func:`train` is the body of one GMI, with the cross-GMI collectives passed in.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from omegaconf import DictConfig, OmegaConf

from isaacgymenvs_gmi.comm.selector import mrr_valid
from isaacgymenvs_gmi.comm.transport import ipc_possible
from isaacgymenvs_gmi.config import (
    ConfigError,
    GmiConfig,
    detect_platform,
    report_ignored_keys,
    resolve_sim_settings,
    validate_train_config,
)
from isaacgymenvs_gmi.gmi.backends import layout_for, plan_node
from isaacgymenvs_gmi.gmi.inventory import Inventory, detect_inventory
from isaacgymenvs_gmi.gmi.layout import GmiLayout
from isaacgymenvs_gmi.plan import RunPlan
from isaacgymenvs_gmi.tasks import UnknownTaskError, get_task_class
from isaacgymenvs_gmi.tasks.base import TaskConfigError

log = logging.getLogger(__name__)

Platform = tuple[bool, tuple[str, ...], bool]  # (CUDA available, JAX platforms, warp installed)


@dataclass
class RunResult:
    mean_reward: float | None  # mean return of the episodes finished last (training or play)
    mean_length: float | None
    frames: int  # this GMI's env steps
    experiment_dir: str | None
    history: list[tuple[int, float, float]]  # (frame, wall time s, mean reward), training only


def _torchrun_world() -> tuple[int, int] | None:
    """(world size, ranks per node) when this process is a rank started by torchrun."""
    if "TORCHELASTIC_RUN_ID" in os.environ and "LOCAL_WORLD_SIZE" in os.environ:
        return int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_WORLD_SIZE"])
    return None


def _torchrun_layout(gmi: GmiConfig, devices: int, world: tuple[int, int]) -> GmiLayout:
    """Match torchrun's ranks to devices: per node, ranks = devices x GMIs per device."""
    size, per_node = world
    if per_node % devices:
        raise ConfigError("gmi.num_gpus", devices, f"must divide --nproc_per_node={per_node}")
    per_device = per_node // devices
    if gmi.per_gpu not in (1, per_device):  # 1 is the default: torchrun's count decides
        raise ConfigError(
            "gmi.per_gpu", gmi.per_gpu, f"torchrun starts {per_node} ranks on {devices} device(s)"
        )
    return GmiLayout(num_nodes=size // per_node, devices_per_node=devices, per_device=per_device)


def plan_run(
    cfg: DictConfig, platform: Platform | None = None, inventory: Inventory | None = None
) -> RunPlan:
    """Validate ``cfg`` into a :class:`RunPlan` (raises :class:`ConfigError`)."""
    try:
        task_cls = get_task_class(cfg.task_name)
    except UnknownTaskError as e:
        raise ConfigError("task", cfg.task_name, str(e).split(": ", 1)[1]) from None
    try:
        task_cls.check_config(OmegaConf.to_container(cfg.task.env, resolve=True))
    except TaskConfigError as e:
        raise ConfigError(f"task.env.{e.key}", e.value, e.constraint) from None
    gmi = GmiConfig.from_cfg(cfg.get("gmi"))
    num_envs = cfg.task.env.numEnvs
    validate_train_config(cfg.task_name, num_envs, cfg.train.params)
    cuda, jax_platforms, warp = platform or detect_platform()
    sim = resolve_sim_settings(
        cfg, cuda_available=cuda, jax_platforms=jax_platforms, warp_available=warp
    )
    if gmi.mode != "sync":
        raise ConfigError("gmi.mode", gmi.mode, "only sync (PPO) is available in this version")
    if cfg.test and not cfg.checkpoint:
        raise ConfigError("checkpoint", cfg.checkpoint, "test=True needs a checkpoint file to play")
    if cfg.checkpoint and not os.path.isfile(str(cfg.checkpoint)):
        raise ConfigError("checkpoint", cfg.checkpoint, "no such file")
    node = plan_node(gmi, inventory or _inventory(cuda))
    world = _torchrun_world()
    layout = _torchrun_layout(gmi, node.devices, world) if world else layout_for(node)
    if gmi.comm == "mrr" and layout.world_size > 1 and not mrr_valid(layout.mpl()):
        raise ConfigError(
            "gmi.comm",
            "mrr",
            f"needs as many GMIs on every GPU and no more than GPUs; MPL="
            f"{layout.mpl()} (use auto, mpr or har)",
        )
    if gmi.intra_device == "ipc" and not ipc_possible(cuda, node.backend):
        raise ConfigError(
            "gmi.intra_device",
            "ipc",
            f"needs GMIs sharing a GPU under MPS or direct sharing (here: {node.backend}"
            f"{'' if cuda else ', no GPU'}); use auto, shm or gloo",
        )
    if cfg.test and layout.world_size > 1 and not world:
        log.info("test=True: playing the checkpoint in one process")
        layout = GmiLayout(1, 1, 1)
    seed = int(cfg.seed)
    if seed == -1:
        seed = random.randint(0, 10000)
    return RunPlan(
        task_name=cfg.task_name,
        num_envs=int(num_envs),
        seed=seed,
        sim=sim,
        gmi=gmi,
        gmi_backend=node.backend,
        layout=layout,
        test=bool(cfg.test),
        checkpoint=str(cfg.checkpoint) or None,
        under_torchrun=world is not None,
    )


def _inventory(cuda: bool) -> Inventory:
    return detect_inventory() if cuda else Inventory()


def run(cfg: DictConfig, plan: RunPlan | None = None) -> RunResult | None:
    """Execute ``plan``; returns GMI 0's result (None on ranks other than 0 under torchrun)."""
    plan = plan or plan_run(cfg)
    report_ignored_keys(cfg, log)
    container = OmegaConf.to_container(cfg, resolve=True)
    if plan.under_torchrun:
        from isaacgymenvs_gmi.gmi.worker import gmi_main

        return gmi_main(container, plan)
    if plan.world_size == 1:
        return train(container, plan)
    from isaacgymenvs_gmi.gmi.launcher import launch_gmis

    total = plan.num_envs * plan.world_size
    log.info("%d envs per GMI x %d GMIs = %d envs", plan.num_envs, plan.world_size, total)
    return launch_gmis(container, plan)


def seed_everything(seed: int, deterministic: bool) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    if deterministic:
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True)


def train(
    cfg: dict[str, Any],
    plan: RunPlan,
    *,
    sync=None,
    resources=None,
    scratch_dir: str | None = None,
) -> RunResult:
    """One GMI's training (or play) run. ``sync`` (a GmiSync) is None for a single GMI."""
    from rl_games.torch_runner import Runner

    from isaacgymenvs_gmi.patches import apply_all
    from isaacgymenvs_gmi.rl.observer import EpisodeStatsObserver
    from isaacgymenvs_gmi.rl.train_config import rlgames_params
    from isaacgymenvs_gmi.rl.vecenv import register_env
    from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask, available_cores

    rank = sync.rank if sync is not None else 0
    seed = plan.seed + rank  # applied once; rl-games' own rank offset is never enabled
    sim_device = resources.sim_device if resources else plan.sim.sim_device
    rl_device = resources.rl_device if resources else plan.sim.rl_device
    cfg_node = OmegaConf.create(cfg)
    apply_all()
    seed_everything(seed, bool(cfg["torch_deterministic"]))
    physics = PhysicsOptions(
        backend=plan.sim.backend, mjx_impl=plan.sim.mjx_impl, assets_root=plan.sim.assets_root
    )
    task_cfg = dict(cfg["task"], env={**cfg["task"]["env"], "numEnvs": plan.num_envs})
    envs: list[VecTask] = []
    central_value = cfg["train"]["params"]["config"].get("central_value_config") is not None

    def create_env(**_: Any) -> VecTask:
        env = VecTask(
            task_cfg,
            rl_device,
            sim_device,
            physics=physics,
            seed=seed,
            states_for_critic=central_value,
        )
        envs.append(env)
        return env

    register_env(create_env)
    params = rlgames_params(
        cfg_node, rl_device=rl_device, seed=seed, num_envs=plan.num_envs, threads=available_cores()
    )
    if sync is not None:
        params["config"]["print_stats"] = False  # the GMI progress line replaces it
        if rank != 0:  # nothing of GMI i > 0 lands in the user's run folder
            params["config"]["train_dir"] = scratch_dir
    log.info(
        "%s: %d envs per GMI, seed %d, %s physics on %s, learner on %s",
        plan.task_name,
        plan.num_envs,
        seed,
        plan.sim.backend,
        sim_device,
        rl_device,
    )
    observer = EpisodeStatsObserver(verbose=sync is None)
    runner = Runner(observer)
    if sync is not None:
        from isaacgymenvs_gmi.runners.ppo_agent import GmiPpoAgent

        runner.algo_factory.register_builder(
            "a2c_continuous", lambda **kw: GmiPpoAgent(sync=sync, **kw)
        )
    runner.load({"params": params})
    runner.reset()
    runner.run(
        {
            "train": not plan.test,
            "play": plan.test,
            "checkpoint": plan.checkpoint,
            "sigma": None if cfg["sigma"] == "" else float(cfg["sigma"]),
        }
    )
    for env in envs:
        env.close()
    writer = getattr(observer.algo, "writer", None)
    if writer is not None:
        writer.close()  # flush; an open tensorboardX writer thread errors at interpreter exit
    if plan.test:
        played = envs[-1].episode_totals() if envs else (None, None)
        print(f"mean episode reward: {played[0]:.3f}, mean episode length: {played[1]:.1f}")
        return RunResult(played[0], played[1], 0, None, [])
    algo = observer.algo
    return RunResult(
        mean_reward=observer.mean_reward,
        mean_length=observer.mean_length,
        frames=int(getattr(algo, "frame", 0)),
        experiment_dir=getattr(algo, "experiment_dir", None) if rank == 0 else None,
        history=observer.history,
    )


__all__ = ["RunPlan", "RunResult", "plan_run", "run", "train"]
