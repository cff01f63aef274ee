"""Building the pieces of the async roles from the plan (shared by processes and the serial
twin): the route shape, the trainer's agent and loop, the actor's env, agent and loop."""

from __future__ import annotations

from typing import Any

from isaacgymenvs_gmi.channels import (
    Batcher,
    Collector,
    Dispenser,
    Ledger,
    RouteShape,
    channel_specs,
    experience_kinds,
    route_shape,
)
from isaacgymenvs_gmi.comm.routing import ipc_possible
from isaacgymenvs_gmi.comm.store import Store
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.runners.lockstep import PpoLockstep

from .actor import ActorLoop
from .agents import build_agent, policy_modules
from .links import ActorLinks, TrainerLinks, Transport, open_actor_links
from .roles import AsyncRoles
from .team import TrainerTeam
from .trainer_loop import TrainerLoop


def chunk_steps_of(plan: RunPlan) -> int:
    return plan.gmi.async_.chunk_steps or plan.train.horizon_length


def kinds_of(plan: RunPlan):
    obs, states, actions = plan.dims
    return experience_kinds(obs, states if plan.train.central_value else 0, actions)


def route_shape_for(plan: RunPlan) -> RouteShape:
    channels = channel_specs(plan.gmi.channels, kinds_of(plan))
    return route_shape(
        channels,
        plan.num_envs,
        chunk_steps_of(plan),
        plan.gmi.async_.ring_slots,
        compress=plan.gmi.channels == "multi",
    )


def build_trainer(
    ctx: GmiContext,
    gmi: int,
    lead: bool,
    lockstep: PpoLockstep | None = None,
    observer: Any = None,
) -> tuple[Any, list]:
    """The trainer's rl-games agent (resumed from the plan's checkpoint) and its modules;
    ``lockstep``: what keeps it identical with the other trainers, if there are others;
    ``observer``: an rl-games observer of the agent (the lead's wandb run)."""
    from .trainer import AsyncPpoAgent

    plan, settings = ctx.plan, ctx.plan.gmi.async_
    agent = build_agent(
        plan,
        rl_device=ctx.resources.rl_device,
        seed=plan.seed + gmi,
        threads=ctx.resources.threads,
        train_dir=None if lead else ctx.scratch_dir,
        observer=observer,
        make=lambda **kw: AsyncPpoAgent(
            rho_bar=settings.rho_bar,
            c_bar=settings.c_bar,
            anchor=settings.anchor,
            lockstep=lockstep,
            **kw,
        ),
    )
    if plan.checkpoint:
        agent.restore(plan.checkpoint)
    return agent, policy_modules(agent)


def trainer_loop(
    ctx: GmiContext,
    agent: Any,
    modules: list,
    links: TrainerLinks,
    lead: bool,
    stop,
    team: TrainerTeam | None = None,
) -> TrainerLoop:
    plan = ctx.plan
    actors = sorted(links.routes)
    carried = tuple(k for k in kinds_of(plan) if k.row_bytes)
    collector = Collector(actors, [links.routes[a] for a in actors], carried)
    ledger = Ledger()
    batcher = Batcher(
        plan.train.horizon_length,
        plan.num_envs,
        chunk_steps_of(plan),
        plan.gmi.async_.max_lag,
        ledger,
    )
    return TrainerLoop(agent, modules, links, collector, batcher, ledger, stop, lead, team)


def build_actor(
    ctx: GmiContext,
    gmi: int,
    links_for: Any,
    *,
    deadline_s: float | None = None,
    train_dir: str | None = None,
) -> tuple[ActorLoop, Any]:
    """The actor's loop and its env. ``links_for(numel)`` opens the actor's ends once the
    policy size is known. ``deadline_s`` (default ``gmi.async.deadline_ms``): the compressor's
    deadline, ``math.inf`` where the consumer runs only between chunks (one process);
    ``train_dir`` (default the GMI's scratch folder): where rl-games may write."""
    from rl_games.algos_torch.a2c_continuous import A2CAgent

    from isaacgymenvs_gmi.channels import flatten
    from isaacgymenvs_gmi.gmi.compile_gate import compile_once_per_device
    from isaacgymenvs_gmi.rl.vecenv import wrap_env
    from isaacgymenvs_gmi.sim.envs import make_env
    from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions

    plan, resources = ctx.plan, ctx.resources
    physics = PhysicsOptions(
        backend=plan.sim.backend,
        mjx_impl=plan.sim.mjx_impl,
        assets_root=plan.sim.assets_root,
        num_threads=resources.threads,
    )

    def build():
        return make_env(
            plan.task_config,
            resources.rl_device,
            resources.sim_device,
            physics=physics,
            seed=plan.seed + gmi,
            states_for_critic=plan.train.central_value,
        )

    # the device's first GMI that plays compiles for the others (serve: every GMI plays)
    players = None if plan.mode == "serve" else range(plan.gmi.trainers, plan.world_size)
    compile_once_per_device(ctx, build, players)
    env = build()
    agent = build_agent(
        plan,
        rl_device=resources.rl_device,
        seed=plan.seed + gmi,
        threads=ctx.resources.threads,
        train_dir=train_dir or ctx.scratch_dir,
        vec_env=wrap_env(env),
        make=lambda **kw: A2CAgent(**kw),
        acting_only=True,
    )
    modules = policy_modules(agent)
    links: ActorLinks = links_for(flatten(modules).numel())
    settings = plan.gmi.async_
    abort = lambda: links.board.stopping  # noqa: E731
    deadline = settings.deadline_ms / 1000.0 if deadline_s is None else deadline_s
    dispenser = Dispenser(gmi, links.routes, deadline, abort)
    bootstrap = bool(plan.train_params["config"].get("value_bootstrap", False))
    return ActorLoop(agent, modules, dispenser, links.board, bootstrap), env


def peer_transports(
    plan: RunPlan, rank: int, peers: tuple[int, ...], on_gpu: bool
) -> dict[int, Transport]:
    """How GMI ``rank`` reaches each of ``peers`` (``gmi.async.transport``): ``p2p`` across
    nodes (or everywhere when asked), ``ipc`` on the same GPU where GMIs can open each other's
    device memory (unless ``shm`` is asked), else ``shm``."""
    asked = plan.gmi.async_.transport
    here = plan.layout.place(rank)
    ipc = asked in ("auto", "ipc") and ipc_possible(on_gpu, plan.gmi_backend)
    out: dict[int, Transport] = {}
    for peer in peers:
        there = plan.layout.place(peer)
        if asked == "p2p" or there.node != here.node:
            out[peer] = "p2p"
        else:
            out[peer] = "ipc" if ipc and there.device == here.device else "shm"
    return out


def describe_transports(transports: dict[int, Transport]) -> str:
    """`` (1 point to point, 2 CUDA IPC)``: the routes not over host shared memory."""
    names = {"p2p": "point to point", "ipc": "CUDA IPC"}
    counts = [
        f"{sum(t == kind for t in transports.values())} {name}"
        for kind, name in names.items()
        if kind in transports.values()
    ]
    return f" ({', '.join(counts)})" if counts else ""


def open_actor(
    ctx: GmiContext, roles: AsyncRoles, store: Store
) -> tuple[ActorLoop, Any, ActorLinks]:
    """This actor's loop, env and channel ends (remote ones still to :meth:`connect`)."""
    shape = route_shape_for(ctx.plan)
    device = ctx.resources.rl_device
    transports = peer_transports(ctx.plan, ctx.rank, roles.trainers, device.startswith("cuda"))
    opened: list[ActorLinks] = []

    def links_for(numel: int) -> ActorLinks:
        opened.append(open_actor_links(ctx.rank, roles, shape, numel, store, transports, device))
        return opened[0]

    actor, env = build_actor(ctx, ctx.rank, links_for)
    return actor, env, opened[0]
