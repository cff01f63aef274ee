"""Every role of an async run in this one process, in turn, over private-memory channels (the
in-process twin; ``gmi.async.serial=true``): the same actors, trainer, dispenser, migrator,
batcher and ledger as with processes, for a debugger or a test. Actors share this process's
cores; nothing runs in parallel."""

from __future__ import annotations

import logging
import math

from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.runners.result import RunResult

from .roles import AsyncRoles

log = logging.getLogger(__name__)


def run_serial(ctx: GmiContext, roles: AsyncRoles) -> RunResult:
    from isaacgymenvs_gmi.channels import flatten
    from isaacgymenvs_gmi.patches import apply_all, set_checkpoint_metadata
    from isaacgymenvs_gmi.runners.seeding import seed_everything

    from .links import in_process_links
    from .parts import build_actor, build_trainer, route_shape_for, trainer_loop

    plan = ctx.plan
    apply_all()
    set_checkpoint_metadata(task=plan.task_name)
    seed_everything(plan.seed, plan.train.torch_deterministic)
    say(roles.describe(plan.layout) + " (serial: one process, in-process channels)")
    (trainer_id,) = roles.trainers
    agent, modules = build_trainer(ctx, trainer_id, lead=True)
    numel = flatten(modules).numel()
    trainer_links, actor_links = in_process_links(roles, route_shape_for(plan), numel)
    loop = trainer_loop(ctx, agent, modules, trainer_links[trainer_id], True, ctx.stop_signal)
    actors, envs = [], []
    for gmi in roles.actors:
        # the trainer polls only between chunks: a deadline would only split them
        actor, env = build_actor(ctx, gmi, lambda _, gmi=gmi: actor_links[gmi], deadline_s=math.inf)
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
