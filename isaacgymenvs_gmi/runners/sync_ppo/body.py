"""The body of a sync-PPO GMI: seed, build the task, train (or play) with rl-games' Runner.

With a group, the GMI first builds its gradient reduction (collective: every GMI in the same
order) and trains with :class:`~.agent.GmiPpoAgent` in lockstep with the others; in one process
it trains with rl-games' own agent, exactly as IsaacGymEnvs would. Either way the progress line
is ours (:mod:`.telemetry`), in place of rl-games' ``fps step`` line.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from isaacgymenvs_gmi import startup_clock
from isaacgymenvs_gmi.gmi.compile_gate import compile_once_per_device
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.runners.result import RunResult

if TYPE_CHECKING:
    from isaacgymenvs_gmi.runners.lockstep import PpoLockstep

    from .telemetry import EpochTelemetry

log = logging.getLogger(__name__)


def run_sync_ppo(ctx: GmiContext) -> RunResult:
    """One GMI's training (or play) run; returns its :class:`RunResult`."""
    startup_clock.mark("gmi")
    from .telemetry import EpochTelemetry, gather_one

    plan, group = ctx.plan, ctx.group
    lockstep = None
    if group is not None:  # gradient reduction and statistics merging (collective)
        from isaacgymenvs_gmi.runners.lockstep import build_lockstep

        lockstep = build_lockstep(ctx, plan.layout, group)
    telemetry = EpochTelemetry(
        plan.num_envs,
        plan.train.horizon_length,
        ctx.rank,
        gather_one if group is None else group.all_gather_vector,
    )
    return _train(ctx, lockstep, telemetry)


def _train(ctx: GmiContext, lockstep: PpoLockstep | None, telemetry: EpochTelemetry) -> RunResult:
    from rl_games.torch_runner import Runner

    from isaacgymenvs_gmi.patches import apply_all, set_checkpoint_metadata
    from isaacgymenvs_gmi.rl.observer import EpisodeStatsObserver, ObserverChain
    from isaacgymenvs_gmi.rl.train_config import rlgames_params
    from isaacgymenvs_gmi.rl.vecenv import register_env
    from isaacgymenvs_gmi.runners.seeding import seed_everything
    from isaacgymenvs_gmi.runners.video import video_recorder
    from isaacgymenvs_gmi.runners.wandb_run import wandb_for
    from isaacgymenvs_gmi.sim.envs import make_env
    from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions

    plan, rank, resources = ctx.plan, ctx.rank, ctx.resources
    seed = plan.seed + rank  # applied once; rl-games' own rank offset is never enabled
    apply_all()
    set_checkpoint_metadata(task=plan.task_name)
    seed_everything(seed, plan.train.torch_deterministic)
    physics = PhysicsOptions(
        backend=plan.sim.backend,
        mjx_impl=plan.sim.mjx_impl,
        assets_root=plan.sim.assets_root,
        num_threads=resources.threads,
    )
    envs: list[Any] = []  # VecTask or ForeignVecTask
    observer = EpisodeStatsObserver()
    wandb = wandb_for(plan, logs=rank == 0)  # one wandb run: GMI 0's

    def build() -> Any:
        return make_env(
            plan.task_config,
            resources.rl_device,
            resources.sim_device,
            physics=physics,
            seed=seed,
            states_for_critic=plan.train.central_value,
        )

    def create_env(**_: Any) -> Any:
        if not envs:  # the player builds another env later: only the first one counts
            startup_clock.mark("env_begin")
            compile_once_per_device(ctx, build)  # the device's first GMI compiles for all
        env = build()
        envs.append(env)
        if len(envs) == 1:
            startup_clock.mark("env_built")
        if plan.video.capture and rank == 0:
            env.attach_video(video_recorder(plan, env, observer, wandb))
        return env

    register_env(create_env)
    params = rlgames_params(
        plan.train_params,
        plan.train,
        rl_device=resources.rl_device,
        seed=seed,
        num_envs=plan.num_envs,
        threads=resources.threads,
    )
    params["config"]["print_stats"] = False  # the progress line replaces rl-games' fps line
    if lockstep is not None and rank != 0:  # nothing of GMI i > 0 lands in the user's run folder
        params["config"]["train_dir"] = ctx.scratch_dir
    log.info(
        "%s: %d envs per GMI, seed %d, %s physics on %s, learner on %s",
        plan.task_name,
        plan.num_envs,
        seed,
        plan.sim.backend,
        resources.sim_device,
        resources.rl_device,
    )
    runner = Runner(observer if wandb is None else ObserverChain(observer, wandb))
    if lockstep is not None:
        from .agent import GmiPpoAgent

        runner.algo_factory.register_builder(
            "a2c_continuous",
            lambda **kw: GmiPpoAgent(
                lockstep=lockstep,
                telemetry=telemetry,
                before_epoch=ctx.before_epoch,
                should_stop=ctx.should_stop,
                **kw,
            ),
        )
    else:
        from .stopping import StoppableAgent

        runner.algo_factory.register_builder(
            "a2c_continuous",
            lambda **kw: StoppableAgent(
                should_stop=ctx.should_stop,
                before_epoch=ctx.before_epoch,
                telemetry=telemetry,
                **kw,
            ),
        )
    runner.load({"params": params})
    runner.reset()
    try:
        runner.run(
            {
                "train": not plan.test,
                "play": plan.test,
                "checkpoint": plan.checkpoint,
                "sigma": plan.train.sigma,
            }
        )
    except BaseException:
        if wandb is not None:
            wandb.finish(failed=True)
        raise
    for env in envs:
        env.close()
    writer = getattr(observer.algo, "writer", None)
    if writer is not None:
        writer.close()  # flush; an open tensorboardX writer thread errors at interpreter exit
    if wandb is not None:
        wandb.finish()  # after the writer's last scalars, which it syncs
    if plan.test:
        played = envs[-1].episode_totals() if envs else (None, None)
        print(f"mean episode reward: {played[0]:.3f}, mean episode length: {played[1]:.1f}")
        return RunResult(played[0], played[1], 0, None, [])
    algo = observer.algo
    frames_per_epoch = plan.num_envs * plan.train.horizon_length * plan.world_size
    return RunResult(
        mean_reward=observer.mean_reward,
        mean_length=observer.mean_length,
        frames=int(getattr(algo, "frame", 0)),
        experiment_dir=getattr(algo, "experiment_dir", None) if rank == 0 else None,
        history=observer.history,
        stopped_by=getattr(algo, "stopped_by", None),
        ended_by=getattr(algo, "ended_by", None),
        checkpoint=getattr(algo, "last_checkpoint", None) if rank == 0 else None,
        epoch_rates=[frames_per_epoch / max(t, 1e-9) for t in getattr(algo, "epoch_seconds", [])],
    )
