"""An actor: a GMI that plays the policy on its envs into channels (async actors, serving)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from isaacgymenvs_gmi.channels import Dispenser
from isaacgymenvs_gmi.channels.wiring import ActorLinks
from isaacgymenvs_gmi.gmi.context import GmiContext

from .actor_loop import ActorLoop
from .agents import build_agent, policy_modules
from .env_builder import env_builder


def build_actor(
    ctx: GmiContext,
    gmi: int,
    links_for: Callable[[int], ActorLinks],
    *,
    players: Iterable[int] | None,
    deadline_s: float,
    train_dir: str | None = None,
) -> tuple[ActorLoop, Any]:
    """The actor's loop and its env. ``links_for(numel)`` opens the actor's ends once the
    policy size is known; ``players``: the GMIs that build envs (None: every GMI);
    ``deadline_s``: the compressor's deadline; ``train_dir`` (default the GMI's scratch
    folder): where rl-games may write."""
    from rl_games.algos_torch.a2c_continuous import A2CAgent

    from isaacgymenvs_gmi.channels import flatten
    from isaacgymenvs_gmi.gmi.compile_gate import compile_once_per_device
    from isaacgymenvs_gmi.rl.vecenv import wrap_env

    plan, resources = ctx.plan, ctx.resources
    build = env_builder(ctx, seed=plan.seed_of(gmi))
    compile_once_per_device(ctx, build, players)
    env = build()
    agent = build_agent(
        plan,
        rl_device=resources.rl_device,
        seed=plan.seed_of(gmi),
        threads=resources.threads,
        train_dir=train_dir or ctx.scratch_dir,
        vec_env=wrap_env(env),
        make=lambda **kw: A2CAgent(**kw),
        acting_only=True,
    )
    modules = policy_modules(agent)
    links = links_for(flatten(modules).numel())
    abort = lambda: links.board.stopping  # noqa: E731
    dispenser = Dispenser(gmi, links.routes, deadline_s, abort)
    bootstrap = plan.train.value_bootstrap
    return ActorLoop(agent, modules, dispenser, links.board, bootstrap, ctx.before_epoch), env
