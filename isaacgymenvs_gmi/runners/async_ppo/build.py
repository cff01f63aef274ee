"""Building the async roles from the plan (shared by processes and the serial twin)."""

from __future__ import annotations

from typing import Any

from isaacgymenvs_gmi.channels import Batcher, Collector, Ledger
from isaacgymenvs_gmi.channels.roles import AsyncRoles
from isaacgymenvs_gmi.channels.wiring import (
    ActorLinks,
    TrainerLinks,
    chunk_steps_of,
    kinds_of,
    open_actor_links,
    peer_transports,
    route_shape_for,
)
from isaacgymenvs_gmi.comm.store import Store
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.runners.shared.acting import build_actor
from isaacgymenvs_gmi.runners.shared.actor_loop import ActorLoop
from isaacgymenvs_gmi.runners.shared.agents import build_agent, policy_modules
from isaacgymenvs_gmi.runners.shared.lockstep import PpoLockstep

from .actor_watch import ActorWatch
from .team import TrainerTeam
from .trainer_loop import TrainerLoop


def build_trainer(
    ctx: GmiContext,
    gmi: int,
    lead: bool,
    lockstep: PpoLockstep | None = None,
    observer: Any = None,
) -> tuple[Any, list]:
    """The trainer's rl-games agent (resumed from the plan's checkpoint) and its modules;
    ``observer``: an rl-games observer of the agent (the lead's wandb run)."""
    from .trainer import AsyncPpoAgent

    plan, settings = ctx.plan, ctx.plan.mode_settings
    vtrace = dict(rho_bar=settings.rho_bar, c_bar=settings.c_bar, anchor=settings.anchor)
    agent = build_agent(
        plan,
        rl_device=ctx.resources.rl_device,
        seed=plan.seed_of(gmi),
        threads=ctx.resources.threads,
        train_dir=None if lead else ctx.scratch_dir,
        observer=observer,
        make=lambda **kw: AsyncPpoAgent(lockstep=lockstep, **vtrace, **kw),
    )
    if plan.checkpoint:
        agent.restore(plan.checkpoint)
    return agent, policy_modules(agent)


def actors_of(plan) -> range:
    """The actor GMIs: the ones that build envs (the device's first compiles for the others)."""
    return range(plan.gmi.trainers, plan.world_size)


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
    collector = Collector(actors, [links.routes[a] for a in actors], kinds_of(plan))
    ledger = Ledger()
    settings = plan.mode_settings
    chunk = chunk_steps_of(plan, settings)
    batcher = Batcher(plan.train.horizon_length, plan.num_envs, chunk, settings.max_lag, ledger)
    watch = None  # the serial twin's actors run in this process, between the trainer's turns
    if ctx.group is not None:
        watch = ActorWatch(links.routes, plan.gmi.timeout_s, ctx.group.startup_timeout_s)
    return TrainerLoop(
        agent, modules, links, collector, batcher, ledger, stop, lead, team, watch=watch
    )


def open_actor(
    ctx: GmiContext, roles: AsyncRoles, store: Store
) -> tuple[ActorLoop, Any, ActorLinks]:
    """This actor's loop, env and channel ends (remote ones still to :meth:`connect`)."""
    plan, settings = ctx.plan, ctx.plan.mode_settings
    shape = route_shape_for(plan, settings)
    on_gpu = ctx.resources.rl_device.startswith("cuda")
    transports = peer_transports(plan, settings.transport, ctx.rank, roles.trainers, on_gpu)
    device = ctx.resources.rl_device
    opened: list[ActorLinks] = []

    def links_for(numel: int) -> ActorLinks:
        opened.append(open_actor_links(ctx.rank, roles, shape, numel, store, transports, device))
        return opened[0]

    deadline_s = settings.deadline_ms / 1000.0
    actor, env = build_actor(
        ctx, ctx.rank, links_for, players=actors_of(plan), deadline_s=deadline_s
    )
    return actor, env, opened[0]
