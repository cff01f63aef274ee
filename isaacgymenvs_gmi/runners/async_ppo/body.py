"""The body of an async GMI (``gmi.mode=async``): a trainer or an actor, by its GMI id.

Trainers open the channels, actors attach, every GMI meets once at a start-up barrier, and from
then on they share only memory: an actor that dies does not stop the run. The first trainer
ends the run and prints the balance ``produced = consumed + dropped for lag + in flight at
stop``. Several trainers (``gmi.trainers``) train in step as replicas of one learner
(:mod:`.team`). Without a group (``serial``) every role runs in this process, in turn.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from isaacgymenvs_gmi.channels.roles import AsyncRoles
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.runners.result import RunResult
from isaacgymenvs_gmi.runners.shared.preamble import prepare_gmi

if TYPE_CHECKING:
    from .team import TrainerTeam

log = logging.getLogger(__name__)


def run_async_ppo(ctx: GmiContext) -> RunResult | None:
    plan = ctx.plan
    roles = AsyncRoles.of(plan.world_size, plan.gmi.trainers)
    if ctx.group is None:
        from .serial import run_serial

        return run_serial(ctx, roles)
    rank = ctx.rank
    if rank == 0:
        say(roles.describe(plan.layout))
    prepare_gmi(plan, plan.seed_of(rank))
    team = _join_trainers(ctx, roles)
    if roles.is_trainer(rank):
        return _trainer(ctx, roles, team)
    _actor(ctx, roles)
    return None


def _join_trainers(ctx: GmiContext, roles: AsyncRoles) -> TrainerTeam | None:
    """With several trainers, their group and gradient reduction; collective: actors (and an
    only trainer) take part and get None."""
    k = len(roles.trainers)
    if k == 1:
        return None
    from isaacgymenvs_gmi.runners.shared.lockstep import build_lockstep

    from .team import TrainerTeam

    trainers = ctx.group.leading(k, "trainers")
    lockstep = build_lockstep(ctx, ctx.plan.layout.first(k), trainers)
    return None if lockstep is None else TrainerTeam(lockstep)


def _trainer(ctx: GmiContext, roles: AsyncRoles, team: TrainerTeam | None) -> RunResult:
    from isaacgymenvs_gmi.channels import flatten, wiring
    from isaacgymenvs_gmi.channels.p2p import TorchPointToPoint
    from isaacgymenvs_gmi.runners.shared.wandb_run import finishing, wandb_for

    from .build import build_trainer, trainer_loop

    plan, rank, group = ctx.plan, ctx.rank, ctx.group
    lead = rank == roles.trainers[0]
    wandb = wandb_for(plan, logs=lead)  # one wandb run: the lead trainer's
    agent, modules = build_trainer(ctx, rank, lead, team.lockstep if team else None, wandb)
    numel = flatten(modules).numel()
    device = ctx.resources.rl_device
    settings = plan.mode_settings
    on_gpu = device.startswith("cuda")
    transports = wiring.peer_transports(plan, settings.transport, rank, roles.actors, on_gpu)
    shape = wiring.route_shape_for(plan, settings)
    links = wiring.open_trainer_links(rank, roles, shape, numel, group.store, transports, device)
    try:
        loop = trainer_loop(ctx, agent, modules, links, lead, ctx.stop_signal, team)
        group.startup_barrier("async channels open")
    finally:
        links.unlink()  # every GMI has mapped them (or the run is failing): no names left
    links.connect(TorchPointToPoint())
    say(
        f"GMI {rank}: trainer ready, {len(roles.actors)} actor route(s)"
        f"{wiring.describe_transports(transports)}, policy {numel:,} values"
    )
    with finishing(wandb):
        loop.run()
        result = loop.finish()  # closes the lead's summaries: their last scalars get synced
    links.close()
    return result


def _actor(ctx: GmiContext, roles: AsyncRoles) -> None:
    from isaacgymenvs_gmi.channels.p2p import TorchPointToPoint

    from .build import open_actor

    actor, env, links = open_actor(ctx, roles, ctx.group.store)
    ctx.group.startup_barrier("async channels open")
    try:
        links.connect(TorchPointToPoint())
        actor.run()
        links.close()
    finally:
        env.close()
    log.info("GMI %d: actor stopped after %d env steps", ctx.rank, actor.steps)
