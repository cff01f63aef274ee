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
from dataclasses import dataclass, replace
from typing import Any

from omegaconf import DictConfig, OmegaConf

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.comm import ipc_possible, mrr_valid
from isaacgymenvs_gmi.config import (
    ConfigError,
    GmiConfig,
    TrainSettings,
    detect_platform,
    ignored_physx_keys,
    report_ignored_keys,
    resolve_sim_settings,
    validate_train_config,
)
from isaacgymenvs_gmi.config.ppo_values import validate_ppo_values
from isaacgymenvs_gmi.config.randomization import RandomizationSettings
from isaacgymenvs_gmi.config.run_inputs import check_gmi_seeds, check_run_inputs
from isaacgymenvs_gmi.config.sources import bundled_config_dir
from isaacgymenvs_gmi.config.task_env import TaskEnvSettings
from isaacgymenvs_gmi.config.upstream_switches import not_applied
from isaacgymenvs_gmi.config.video import VideoSettings
from isaacgymenvs_gmi.config.wandb import WandbSettings
from isaacgymenvs_gmi.console import quiet_console
from isaacgymenvs_gmi.gmi.spawn import GmiInterrupted, spawn_gmis
from isaacgymenvs_gmi.gmi.stop import STARTUP, signal_name
from isaacgymenvs_gmi.gmi.worker import gmi_main, run_in_process
from isaacgymenvs_gmi.placement.cpu_sets import usable_cores
from isaacgymenvs_gmi.placement.gpu_sharing import NodeLayout, layout_for, node_layout
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
from isaacgymenvs_gmi.sim.envs import is_task_logic
from isaacgymenvs_gmi.sim.foreign import preflight_vec_task
from isaacgymenvs_gmi.sim.preflight import TaskFootprint, preflight_task
from isaacgymenvs_gmi.tasks import (
    TaskModuleError,
    UnknownTaskError,
    get_task_class,
    import_task_modules,
    is_vec_task_class,
)
from isaacgymenvs_gmi.tasks.base import TaskConfigError

log = logging.getLogger(__name__)

Platform = tuple[bool, tuple[str, ...], bool]  # (CUDA available, JAX platforms, warp installed)


def plan_run(
    cfg: DictConfig, platform: Platform | None = None, inventory: Inventory | None = None
) -> RunPlan:
    """Validate ``cfg`` into a :class:`RunPlan` (raises :class:`ConfigError`)."""
    task_modules = load_task_modules(cfg.get("task_modules"))
    task = _task_of(cfg)
    check_run_inputs(cfg)
    gmi = GmiConfig.from_cfg(cfg.get("gmi"))
    mode = chosen_mode(cfg, gmi.mode)  # e.g. pbt.enabled=True: gmi.mode=pbt
    gmi = replace(gmi, mode=mode.name)
    settings = mode.settings(cfg)
    num_envs = task.config["env"]["numEnvs"]
    train_params = OmegaConf.to_container(cfg.train, resolve=True)["params"]
    train = TrainSettings.from_cfg(cfg)
    cuda, jax_platforms, warp = platform or detect_platform()
    sim = resolve_sim_settings(
        cfg, cuda_available=cuda, jax_platforms=jax_platforms, warp_available=warp
    )
    footprint = task.preflight(sim.assets_root)
    place = _place(gmi, cuda, inventory, mode)
    layout, backend = place.layout, place.node.backend
    _check_machine(cfg, num_envs, layout.per_node, backend, footprint, train)
    _check_training(cfg, mode, num_envs, train_params)
    dims = (footprint.num_obs, footprint.num_states, footprint.num_actions)
    facts = ModeFacts(
        gmi, layout, train_params, num_envs, train, backend, cuda, settings, cfg.task_name, dims
    )
    terms = mode.check(facts)
    video = _video_settings(cfg, mode, task.foreign)
    wandb = WandbSettings.from_cfg(cfg)
    _check_checkpoint(cfg, task.config, train_params, dims, resumes=mode.trains)
    if task.randomization is not None:
        log.info(task.randomization.describe())
    if cfg.test and layout.world_size > 1 and not place.under_torchrun:
        log.info("test=True: playing the checkpoint in one process")
        layout = GmiLayout(1, 1, 1)
    seed = _seed(cfg.seed)
    check_gmi_seeds(seed, layout.world_size)
    task_env = TaskEnvSettings.from_task_config(task.config)
    task.config["env"]["numEnvs"] = task_env.num_envs  # a count, for the user's own VecTask too
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
        test=bool(cfg.test),
        checkpoint=str(cfg.checkpoint) or None,
        under_torchrun=place.under_torchrun,
        dims=dims,
        terms=terms,
        task_modules=task_modules,
        wandb=wandb,
        run_config=OmegaConf.to_container(cfg, resolve=True) if wandb.activate else None,
        video=video,
        mode_settings=settings,
        unread_keys=_unread_keys(task, footprint, train_params),
    )


def _unread_keys(task: _Task, footprint: TaskFootprint, train_params: dict) -> tuple[str, ...]:
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


@dataclass
class _Task:
    """The task's class and its resolved config (handed on as is), checked."""

    name: str
    cls: type
    config: dict[str, Any]
    foreign: bool  # a class with IsaacGymEnvs' VecTask interface, not one of our TaskLogics
    randomization: RandomizationSettings | None  # a foreign VecTask reads its own

    def preflight(self, assets_root: str | None) -> TaskFootprint:
        """Its widths and sizes, from a model built without simulating (ConfigError)."""
        if self.foreign:
            return preflight_vec_task(self.cls, self.config)
        bundled = _bundled_env(self.name)
        return preflight_task(self.cls, self.config, assets_root, bundled, self.randomization)


def _task_of(cfg: DictConfig) -> _Task:
    try:
        task_cls = get_task_class(cfg.task_name)
    except UnknownTaskError as e:
        raise ConfigError("task", cfg.task_name, str(e).split(": ", 1)[1]) from None
    config = OmegaConf.to_container(cfg.task, resolve=True)  # resolved once, handed on
    foreign = not is_task_logic(task_cls)
    if foreign and not is_vec_task_class(task_cls):
        raise ConfigError(
            "task", cfg.task_name, f"{task_cls!r} is neither a TaskLogic nor a VecTask class"
        )
    try:
        if not foreign:
            task_cls.check_config(config["env"])
    except TaskConfigError as e:
        raise ConfigError(f"task.env.{e.key}", e.value, e.constraint) from None
    randomization = None if foreign else RandomizationSettings.from_task_config(config)
    return _Task(cfg.task_name, task_cls, config, foreign, randomization)


@dataclass(frozen=True)
class _Placement:
    node: NodeLayout
    layout: GmiLayout
    under_torchrun: bool


def _place(gmi: GmiConfig, cuda: bool, inventory: Inventory | None, mode: Mode) -> _Placement:
    """Where the GMIs go (this node's devices, or torchrun's world), and the transports the
    layout allows (ConfigError naming ``gmi.comm`` or ``gmi.intra_device``)."""
    inventory = inventory or (detect_inventory() if cuda else Inventory())
    node = node_layout(gmi, inventory, mode.independent_gmis)
    world = torchrun_world(os.environ)
    layout = torchrun_layout(gmi, node.devices, world) if world else layout_for(node)
    ipc = ipc_possible(cuda, node.backend)
    if gmi.comm == "mrr" and layout.world_size > 1 and not mrr_valid(layout.mpl()):
        raise ConfigError(
            "gmi.comm",
            "mrr",
            f"needs as many GMIs on every GPU and no more than GPUs; MPL="
            f"{layout.mpl()} (use auto, mpr or har)",
        )
    if gmi.intra_device == "ipc" and not ipc:
        raise ConfigError(
            "gmi.intra_device",
            "ipc",
            f"needs GMIs sharing a GPU under MPS or direct sharing (here: {node.backend}"
            f"{'' if cuda else ', no GPU'}); use auto, shm or gloo",
        )
    return _Placement(node, layout, world is not None)


def _check_training(cfg: DictConfig, mode: Mode, num_envs: object, train_params: dict) -> None:
    """The PPO batch fits (modes that train, when not playing), the PPO values are sane and
    every name rl-games looks up (algorithm, model, network, activations, ...) is one it has."""
    check_rlgames_names(train_params)
    if mode.trains and not cfg.test:  # playing: the PPO batch geometry is not used
        validate_train_config(cfg.task_name, num_envs, train_params)
    iterations_given = str(cfg.get("max_iterations", "")) != ""
    validate_ppo_values(
        train_params,
        max_epochs_key="max_iterations" if iterations_given else "train.params.config.max_epochs",
    )


def _check_checkpoint(
    cfg: DictConfig,
    task_config: dict,
    train_params: dict,
    dims: tuple[int, int, int],
    resumes: bool,
) -> None:
    """``checkpoint`` loads as plain data and fits this task and network (``test=True`` needs
    one), and holds what resuming reads where the mode ``resumes`` training, or is refused."""
    if cfg.test and not cfg.checkpoint:
        raise ConfigError("checkpoint", cfg.checkpoint, "test=True needs a checkpoint file to play")
    if not cfg.checkpoint:
        return
    from isaacgymenvs_gmi.rl.checkpoint_check import check_checkpoint

    resumes = resumes and not cfg.test
    check_checkpoint(
        str(cfg.checkpoint), cfg.task_name, task_config, train_params, dims, resumes=resumes
    )


def _seed(value: object) -> int:
    """The base seed (``seed=-1``: drawn, as IsaacGymEnvs does)."""
    seed = int(value)
    return random.randint(0, 10000) if seed == -1 else seed


def _video_settings(cfg: DictConfig, mode: Mode, vec_task: bool) -> VideoSettings:
    """``capture_video`` and its keys; refused where no video can be made."""
    video = VideoSettings.from_cfg(cfg)
    if not video.capture:
        return video
    if vec_task:
        reason = f"records our tasks; {cfg.task_name} is a VecTask class of its own"
        raise ConfigError("capture_video", True, reason)
    if not mode.records_video:
        recording = " or ".join(f"gmi.mode={m.name}" for m in MODES.values() if m.records_video)
        raise ConfigError(
            "capture_video", True, f"recorded in {recording} only (here: {mode.name})"
        )
    from isaacgymenvs_gmi.sim.render import renderer_problem

    problem = renderer_problem()
    if problem is not None:
        raise ConfigError("capture_video", True, problem)
    return video


def load_task_modules(value: object) -> tuple[str, ...]:
    """Import the modules of ``task_modules`` (a list of dotted names, or one name)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        names = [value]
    else:
        names = OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
        raise ConfigError("task_modules", value, "must be a list of module names, e.g. [pkg.tasks]")
    try:
        import_task_modules(names)
    except TaskModuleError as err:
        raise ConfigError("task_modules", err.module, f"cannot be imported: {err.cause}") from None
    return tuple(names)


def _check_machine(
    cfg: DictConfig,
    num_envs: object,
    gmis_per_node: int,
    backend: str,
    footprint: TaskFootprint,
    train: TrainSettings,
) -> None:
    """This node can hold its GMIs and their envs (numbers in the error)."""
    memory = available_memory()
    check_gmi_count(gmis_per_node, len(usable_cores()), memory, cpu_backend=backend == "cpu")
    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        return  # not a count: validate_train_config names it
    envs = EnvFootprint(
        physics_values=footprint.physics_state_values,
        obs=footprint.num_obs,
        states=footprint.num_states,
        actions=footprint.num_actions,
        horizon=train.horizon_length,
    )
    key = "num_envs" if str(cfg.get("num_envs", "")) != "" else "task.env.numEnvs"
    check_env_memory(num_envs, gmis_per_node, envs, memory, key)


def _bundled_env(task_name: str) -> dict | None:
    """The ``env`` section of the bundled task file of ``task_name``, if there is one."""
    path = bundled_config_dir() / "task" / f"{task_name}.yaml"
    if not path.is_file():
        return None
    return OmegaConf.to_container(OmegaConf.load(path).get("env", {}), resolve=False)


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
    _stop_if_asked()
    if plan.under_torchrun:
        return gmi_main(plan, mode.body)
    if plan.world_size == 1 or mode.in_one_process(plan):
        return run_in_process(plan, mode.body)
    total = plan.num_envs * plan.world_size
    log.info("%d envs per GMI x %d GMIs = %d envs", plan.num_envs, plan.world_size, total)
    return spawn_gmis(plan, mode.body)


def _stop_if_asked() -> None:
    """A stop signal while the run was being planned: it does not start."""
    signum = STARTUP.signum
    if signum is not None:
        raise GmiInterrupted(signum, f"stopped by {signal_name(signum)} before the run started")


__all__ = ["RunPlan", "RunResult", "plan_run", "run"]
