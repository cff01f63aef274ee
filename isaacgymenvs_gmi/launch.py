"""From a composed Hydra config to a run: validate everything, then dispatch to the GMIs.

:func:`plan_run` checks everything a run depends on and fails with a :class:`ConfigError` naming
the key before any simulator, process or file is created. :func:`run` executes the plan with the
body registered for its mode (:mod:`isaacgymenvs_gmi.runners`): in this process for one GMI, as
this rank's GMI under ``torchrun``, or in GMI processes spawned on this node.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import replace

from omegaconf import DictConfig, OmegaConf

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.comm import check_transports
from isaacgymenvs_gmi.config import (
    GmiConfig,
    RunSettings,
    detect_platform,
    ignored_physx_keys,
    report_ignored_keys,
    resolve_sim_settings,
)
from isaacgymenvs_gmi.config.task_env import TaskEnvSettings
from isaacgymenvs_gmi.config.upstream_switches import not_applied
from isaacgymenvs_gmi.config.video import VideoSettings
from isaacgymenvs_gmi.config.wandb import WandbSettings
from isaacgymenvs_gmi.console import quiet_console
from isaacgymenvs_gmi.gmi.spawn import GmiInterrupted, spawn_gmis
from isaacgymenvs_gmi.gmi.stop import STARTUP, signal_name
from isaacgymenvs_gmi.gmi.worker import gmi_main, run_in_process
from isaacgymenvs_gmi.placement.cpu_sets import usable_cores
from isaacgymenvs_gmi.placement.gpu_sharing import layout_for, node_layout
from isaacgymenvs_gmi.placement.inventory import Inventory, detect_inventory
from isaacgymenvs_gmi.placement.layout import GmiLayout
from isaacgymenvs_gmi.placement.machine_limits import (
    EnvFootprint,
    available_memory,
    check_env_memory,
    check_gmi_count,
)
from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.placement.torchrun import torchrun_layout, torchrun_world
from isaacgymenvs_gmi.rl.train_names import check_rlgames_names, unread_train_config_keys
from isaacgymenvs_gmi.runners import MODES, Mode, ModeFacts, RunResult, chosen_mode, mode_of
from isaacgymenvs_gmi.sim.compile_cache import cache_folder, use_compile_cache
from isaacgymenvs_gmi.sim.preflight import TaskFootprint
from isaacgymenvs_gmi.sim.task_choice import ChosenTask, choose_task, load_task_modules

log = logging.getLogger(__name__)

Platform = tuple[bool, tuple[str, ...], bool]  # (CUDA available, JAX platforms, warp installed)


def plan_run(
    cfg: DictConfig, platform: Platform | None = None, inventory: Inventory | None = None
) -> RunPlan:
    """Validate ``cfg`` into a :class:`RunPlan` (raises :class:`ConfigError`): each key is
    checked by the settings it belongs to, then what no one key can say (layout, machine,
    batch geometry, files and checkpoints) by the settings and parts concerned."""
    task_modules = load_task_modules(cfg.get("task_modules"))
    task = choose_task(cfg)
    run = RunSettings.from_cfg(cfg)
    gmi = GmiConfig.from_cfg(cfg)
    mode = chosen_mode(cfg, gmi.mode)  # e.g. pbt.enabled=True: gmi.mode=pbt
    gmi = replace(gmi, mode=mode.name)
    settings = mode.settings(cfg)
    task_env = TaskEnvSettings.from_task_config(task.config)
    num_envs = task_env.num_envs
    train_params = OmegaConf.to_container(cfg.train, resolve=True)["params"]
    train = run.train()
    cuda, jax_platforms, warp = platform or detect_platform()
    sim = resolve_sim_settings(
        cfg, cuda_available=cuda, jax_platforms=jax_platforms, warp_available=warp
    )
    footprint = task.preflight(sim.assets_root)
    backend, layout, under_torchrun = _place(gmi, cuda, inventory, mode)
    _check_machine(cfg, num_envs, layout.per_node, backend, footprint, train.horizon_length)
    check_rlgames_names(train_params)
    if mode.trains and not run.test:  # playing: the PPO batch geometry is not used
        run.check_batch(cfg.task_name, num_envs)
    dims = (footprint.num_obs, footprint.num_states, footprint.num_actions)
    facts = ModeFacts(
        gmi, layout, train_params, num_envs, train, backend, cuda, settings, cfg.task_name, dims
    )
    terms = mode.check(facts)
    video = VideoSettings.from_cfg(cfg)
    video.check_recordable(
        cfg.task_name,
        vec_task=task.foreign,
        mode=mode.name,
        recording_modes=tuple(m.name for m in MODES.values() if m.records_video),
        renderer_problem=_renderer_problem,
    )
    wandb = WandbSettings.from_cfg(cfg)
    if run.checkpoint:  # loads as plain data, fits this task and network, holds what resuming reads
        from isaacgymenvs_gmi.rl.checkpoint_check import check_checkpoint

        resumes = mode.trains and not run.test
        check_checkpoint(
            run.checkpoint, cfg.task_name, task.config, train_params, dims, resumes=resumes
        )
    if task.randomization is not None:
        log.info(task.randomization.describe())
    if run.test and layout.world_size > 1 and not under_torchrun:
        log.info("test=True: playing the checkpoint in one process")
        layout = GmiLayout(1, 1, 1)
    seed = random.randint(0, 10000) if run.seed == -1 else run.seed  # -1: drawn, as upstream
    run.check_gmi_seeds(seed, layout.world_size)
    task.config["env"]["numEnvs"] = num_envs  # a count, for the user's own VecTask too
    return RunPlan(
        task_name=cfg.task_name,
        task_env=task_env,
        seed=seed,
        sim=sim,
        gmi=gmi,
        gmi_backend=backend,
        layout=layout,
        train=train,
        task_config=task.config,
        train_params=train_params,
        test=bool(run.test),
        checkpoint=run.checkpoint,
        under_torchrun=under_torchrun,
        dims=dims,
        terms=terms,
        task_modules=task_modules,
        wandb=wandb,
        run_config=OmegaConf.to_container(cfg, resolve=True) if wandb.activate else None,
        video=video,
        mode_settings=settings,
        unread_keys=_unread_keys(task, footprint, train_params),
    )


def _unread_keys(task: ChosenTask, footprint: TaskFootprint, train_params: dict) -> tuple[str, ...]:
    """``task.env`` keys our task never read when it was built (a VecTask class of the user's
    reads its own) and ``train.params.config`` keys rl-games never spells, except the Isaac Gym
    settings that have a line of their own."""
    env = [] if task.foreign else [f"task.env.{k}" for k in task.config.get("env") or {}]
    physx = set(ignored_physx_keys({"task": task.config}))
    unread = [
        k
        for k in env
        if k.removeprefix("task.env.") not in footprint.env_keys_read
        and k not in physx
        and not k.startswith("task.env.plane")
    ]
    return (*unread, *unread_train_config_keys(train_params))


def _place(
    gmi: GmiConfig, cuda: bool, inventory: Inventory | None, mode: Mode
) -> tuple[str, GmiLayout, bool]:
    """(this node's GPU-sharing backend, where the GMIs go: this node's devices or torchrun's
    world, whether under torchrun), checked against the transports asked for."""
    inventory = inventory or (detect_inventory() if cuda else Inventory())
    node = node_layout(gmi, inventory, mode.independent_gmis)
    world = torchrun_world(os.environ)
    layout = torchrun_layout(gmi, node.devices, world) if world else layout_for(node)
    check_transports(gmi.comm, gmi.intra_device, layout, on_gpu=cuda, backend=node.backend)
    return node.backend, layout, world is not None


def _check_machine(
    cfg: DictConfig,
    num_envs: int,
    gmis_per_node: int,
    backend: str,
    footprint: TaskFootprint,
    horizon: int,
) -> None:
    """This node can hold its GMIs and their envs (numbers in the error)."""
    memory = available_memory()
    check_gmi_count(gmis_per_node, len(usable_cores()), memory, cpu_backend=backend == "cpu")
    envs = EnvFootprint(
        physics_values=footprint.physics_state_values,
        obs=footprint.num_obs,
        states=footprint.num_states,
        actions=footprint.num_actions,
        horizon=horizon,
    )
    key = "num_envs" if str(cfg.get("num_envs", "")) != "" else "task.env.numEnvs"
    check_env_memory(num_envs, gmis_per_node, envs, memory, key)


def _renderer_problem() -> str | None:
    from isaacgymenvs_gmi.sim.render import renderer_problem

    return renderer_problem()


def run(cfg: DictConfig, plan: RunPlan | None = None) -> RunResult | None:
    """Execute ``plan``; returns GMI 0's result (None on ranks other than 0 under torchrun)."""
    with quiet_console():  # GMI 0's console, or under torchrun this rank's
        plan = plan or plan_run(cfg)
        startup_clock.mark("config")
        return _run(cfg, plan)


def _run(cfg: DictConfig, plan: RunPlan) -> RunResult | None:
    report_ignored_keys(cfg, log, plan.unread_keys)
    use_compile_cache(cache_folder(plan.gmi.compile_cache))  # here and in the GMIs we start
    devices = len(plan.layout.mpl())
    for line in not_applied(
        cfg, under_torchrun=plan.under_torchrun, gmis=plan.world_size, devices=devices
    ):
        log.info(line)
    mode = mode_of(plan)
    signum = STARTUP.signum  # a stop signal while the run was being planned: it does not start
    if signum is not None:
        raise GmiInterrupted(signum, f"stopped by {signal_name(signum)} before the run started")
    if plan.under_torchrun:
        return gmi_main(plan, mode.body)
    if plan.world_size == 1 or mode.in_one_process(plan):
        return run_in_process(plan, mode.body)
    total = plan.num_envs * plan.world_size
    log.info("%d envs per GMI x %d GMIs = %d envs", plan.num_envs, plan.world_size, total)
    return spawn_gmis(plan, mode.body)


__all__ = ["RunPlan", "RunResult", "plan_run", "run"]
