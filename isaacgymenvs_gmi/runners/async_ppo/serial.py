"""Every role of an async run in this one process, in turn, over private-memory channels
(``gmi.async.serial=true``): the same components as with processes, for a debugger or a test."""

from __future__ import annotations

import logging
import math

from isaacgymenvs_gmi.channels.roles import AsyncRoles
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.runners.result import RunResult

log = logging.getLogger(__name__)


def run_serial(ctx: GmiContext, roles: AsyncRoles) -> RunResult:
    from isaacgymenvs_gmi.channels import flatten
    from isaacgymenvs_gmi.channels.wiring import in_process_links, route_shape_for
    from isaacgymenvs_gmi.runners.shared.acting import build_actor
    from isaacgymenvs_gmi.runners.shared.preamble import prepare_gmi

    from .build import actors_of, build_trainer, trainer_loop

    plan = ctx.plan
    prepare_gmi(plan, plan.seed)
    say(roles.describe(plan.layout) + " (serial: one process, in-process channels)")
    (trainer_id,) = roles.trainers
    agent, modules = build_trainer(ctx, trainer_id, lead=True)
    numel = flatten(modules).numel()
    shape = route_shape_for(plan, plan.mode_settings)
    trainer_links, actor_links = in_process_links(roles, shape, numel)
    loop = trainer_loop(ctx, agent, modules, trainer_links[trainer_id], True, ctx.stop_signal)
    actors, envs = [], []
    for gmi in roles.actors:
        # the trainer polls only between chunks: a deadline would only split them
        links = lambda _, gmi=gmi: actor_links[gmi]  # noqa: E731
        actor, env = build_actor(ctx, gmi, links, players=actors_of(plan), deadline_s=math.inf)
        actors.append(actor)
        envs.append(env)
    try:
        while not loop.finished:
            for actor in actors:
                if all(route.free() > 0 for route in actor.dispenser.routes):
                    actor.play_chunk()
            while loop.step() and not loop.finished:  # train on everything that is whole
                pass
        for actor in actors:
            actor.finish()
        return loop.finish()
    finally:
        for env in envs:
            env.close()
