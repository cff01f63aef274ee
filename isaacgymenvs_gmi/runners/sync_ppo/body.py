"""The body of a sync-PPO GMI: seed, build the task, train (or play) with rl-games' Runner: in
lockstep with the other GMIs (:class:`~.agent.GmiPpoAgent`) with a group, else with rl-games'
own agent, as IsaacGymEnvs would. The progress line is :mod:`.telemetry`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.gmi.compile_gate import compile_once_per_device
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.runners.result import RunResult

if TYPE_CHECKING:
    from isaacgymenvs_gmi.runners.shared.lockstep import PpoLockstep

    from .telemetry import EpochTelemetry

log = logging.getLogger(__name__)


def run_sync_ppo(ctx: GmiContext) -> RunResult:
    """One GMI's training (or play) run; returns its :class:`RunResult`."""
    startup_clock.mark("gmi")
    from .telemetry import EpochTelemetry, gather_one

    plan, group = ctx.plan, ctx.group
    lockstep = None
    if group is not None:  # gradient reduction and statistics merging (collective)
        from isaacgymenvs_gmi.runners.shared.lockstep import build_lockstep

        # gmi.debug.same_data: every GMI holds the one batch that one process would
        copies = group.world_size if plan.gmi.debug.same_data else 1
        lockstep = build_lockstep(ctx, plan.layout, group, copies)
    gather = gather_one if group is None else group.all_gather_vector
    telemetry = EpochTelemetry(plan.num_envs, plan.train.horizon_length, ctx.rank, gather)
    return _train(ctx, lockstep, telemetry)


def _train(ctx: GmiContext, lockstep: PpoLockstep | None, telemetry: EpochTelemetry) -> RunResult:
    from rl_games.torch_runner import Runner

    from isaacgymenvs_gmi.rl.observer import EpisodeStatsObserver, ObserverChain
    from isaacgymenvs_gmi.rl.train_config import rlgames_params
    from isaacgymenvs_gmi.rl.vecenv import register_env
    from isaacgymenvs_gmi.runners.shared.preamble import prepare_gmi
    from isaacgymenvs_gmi.runners.shared.video import video_recorder
    from isaacgymenvs_gmi.runners.shared.wandb_run import finishing, wandb_for

    plan, rank, resources = ctx.plan, ctx.rank, ctx.resources
    seed = plan.seed_of(rank)  # applied once; rl-games' own rank offset is never enabled
    prepare_gmi(plan, seed)
    observer = EpisodeStatsObserver()
    wandb = wandb_for(plan, logs=rank == 0)  # one wandb run: GMI 0's
    envs: list[Any] = []  # VecTask or ForeignVecTask, as rl-games asked for them
    video = lambda env: video_recorder(plan, env, observer, wandb)  # noqa: E731
    register_env(_env_factory(ctx, seed, envs, video))
    params = rlgames_params(
        plan.train_params,
        plan.train,
        rl_device=resources.rl_device,
        seed=seed,
        num_envs=plan.num_envs,
        threads=resources.threads,
        # nothing of GMI i > 0 lands in the user's run folder
        train_dir=ctx.scratch_dir if lockstep is not None and rank != 0 else None,
    )
    what = "%s: %d envs per GMI, seed %d, %s physics on %s, learner on %s"
    devices = (resources.sim_device, resources.rl_device)
    log.info(what, plan.task_name, plan.num_envs, seed, plan.sim.backend, *devices)
    runner = Runner(observer if wandb is None else ObserverChain(observer, wandb))
    runner.algo_factory.register_builder("a2c_continuous", _agent_factory(ctx, lockstep, telemetry))
    runner.load({"params": params})
    runner.reset()
    with finishing(wandb):  # after the writer's last scalars, which it syncs
        run = {"train": not plan.test, "play": plan.test, "checkpoint": plan.checkpoint}
        runner.run({**run, "sigma": plan.train.sigma})
        for env in envs:
            env.close()
        if observer.writer is not None:
            observer.writer.close()  # flush; an open tensorboardX writer thread errors at exit
    return _played(envs) if plan.test else _trained(ctx, observer, telemetry)


def _env_factory(
    ctx: GmiContext, seed: int, envs: list[Any], video: Callable[[Any], Any]
) -> Callable[..., Any]:
    """rl-games' env creator: builds this GMI's env (the device's first GMI compiles for the
    others), keeps it in ``envs``, and on GMI 0 attaches ``video(env)`` when recording."""
    from isaacgymenvs_gmi.runners.shared.env_builder import env_builder

    build = env_builder(ctx, seed)

    def create_env(**_: Any) -> Any:
        if not envs:  # the player builds another env later: only the first one counts
            startup_clock.mark("env_begin")
            compile_once_per_device(ctx, build)
        env = build()
        envs.append(env)
        if len(envs) == 1:
            startup_clock.mark("env_built")
        if ctx.plan.video.capture and ctx.rank == 0:
            env.attach_video(video(env))
        return env

    return create_env


def _agent_factory(
    ctx: GmiContext, lockstep: PpoLockstep | None, telemetry: EpochTelemetry
) -> Callable[..., Any]:
    """rl-games' builder of the a2c_continuous agent: in lockstep with the other GMIs when
    there are others, else rl-games' own made stoppable."""
    from isaacgymenvs_gmi.gmi.faults import gradient_hook

    debug = ctx.plan.gmi.debug
    hooks = dict(telemetry=telemetry, before_epoch=ctx.before_epoch, should_stop=ctx.should_stop)
    hooks["gradient_fault"] = gradient_hook(ctx.rank, gmis=ctx.plan.world_size)
    if debug.trace_nonfinite:
        from isaacgymenvs_gmi.rl.nonfinite_trace import NonFiniteTrace

        hooks["trace"] = NonFiniteTrace(log.warning)
    if debug.audit:
        from functools import partial

        from isaacgymenvs_gmi.rl.audit import GradientAudit

        hooks["audit"] = partial(GradientAudit, debug.audit, debug.audit_tolerance, ctx.rank)
    if lockstep is not None:
        from .agent import GmiPpoAgent

        return lambda **kw: GmiPpoAgent(lockstep=lockstep, **hooks, **kw)
    from isaacgymenvs_gmi.runners.shared.stopping import StoppableAgent

    return lambda **kw: StoppableAgent(**hooks, **kw)


def _played(envs: list[Any]) -> RunResult:
    """test=True: the played episodes' mean reward and length."""
    played = envs[-1].episode_totals() if envs else (None, None)
    print(f"mean episode reward: {played[0]:.3f}, mean episode length: {played[1]:.1f}")
    return RunResult(played[0], played[1], 0, None, [])


def _trained(ctx: GmiContext, observer: Any, telemetry: EpochTelemetry) -> RunResult:
    plan = ctx.plan
    frames_per_epoch = plan.num_envs * plan.train.horizon_length * plan.world_size
    result = RunResult.of_training(observer, lead=ctx.rank == 0)
    result.epoch_split = [row["stages"] for row in telemetry.history]
    seconds = getattr(observer.algo, "epoch_seconds", [])
    result.epoch_rates = [frames_per_epoch / max(t, 1e-9) for t in seconds]
    return result
