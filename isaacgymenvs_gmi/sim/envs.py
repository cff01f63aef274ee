"""The one place a GMI builds its env: our VecTask for a :class:`TaskLogic`, or a user's
VecTask-shaped class as it is (:mod:`.foreign`)."""

from __future__ import annotations

from typing import Any

from isaacgymenvs_gmi.config.debug import DebugSettings
from isaacgymenvs_gmi.tasks import TaskLogic, get_task_class, is_vec_task_class

from .compile_cache import compile_counts
from .foreign import ForeignVecTask, build_vec_task
from .vec_task import PhysicsOptions, VecTask


def is_task_logic(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, TaskLogic)


def make_env(
    task_config: dict[str, Any],
    rl_device: str,
    sim_device: str,
    *,
    physics: PhysicsOptions | None = None,
    seed: int = 0,
    states_for_critic: bool = False,
    headless: bool = True,
    debug: DebugSettings | None = None,
) -> VecTask | ForeignVecTask:
    """The env of task ``task_config['name']`` with ``task_config['env']['numEnvs']`` envs;
    ``physics``, ``seed`` and ``debug`` apply to our tasks (a VecTask class uses torch's seed)."""
    cls = get_task_class(task_config["name"])
    if is_task_logic(cls):
        compile_counts()  # count this process's XLA programs from the first one on
        return VecTask(
            task_config,
            rl_device,
            sim_device,
            headless=headless,
            physics=physics,
            seed=seed,
            states_for_critic=states_for_critic,
            debug=debug,
        )
    if not is_vec_task_class(cls):
        raise TypeError(
            f"task {task_config['name']!r}: {cls!r} is neither a TaskLogic subclass nor a class "
            "with IsaacGymEnvs' VecTask interface (step, reset)"
        )
    env = build_vec_task(cls, task_config, rl_device, sim_device, headless)
    return ForeignVecTask(env, states_for_critic)
