"""The one way a GMI builds its envs: the plan's task on the GMI's devices and cores."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from isaacgymenvs_gmi.gmi.context import GmiContext


def env_builder(ctx: GmiContext, seed: int) -> Callable[[], Any]:
    """A function that builds a fresh env of ``ctx``'s task seeded with ``seed``, physics on
    the GMI's sim device, learner tensors on its rl device. On a GPU the first one built says
    which CUDA libraries the GMI runs on (by then both frameworks are on the device)."""
    from isaacgymenvs_gmi.sim.envs import make_env
    from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions

    plan, resources = ctx.plan, ctx.resources
    physics = PhysicsOptions(
        backend=plan.sim.backend,
        mjx_impl=plan.sim.mjx_impl,
        assets_root=plan.sim.assets_root,
        num_threads=resources.threads,
    )

    said = []

    def build() -> Any:
        env = make_env(
            plan.task_config,
            resources.rl_device,
            resources.sim_device,
            physics=physics,
            seed=seed,
            states_for_critic=plan.train.central_value,
            debug=plan.gmi.debug,
        )
        if not said and str(resources.rl_device).startswith("cuda"):
            from isaacgymenvs_gmi.gmi.gpu_identity import report_gpu_identity
            from isaacgymenvs_gmi.gmi.status import say

            said.append(report_gpu_identity(ctx.rank, resources.rl_device, say))
        return env

    return build
