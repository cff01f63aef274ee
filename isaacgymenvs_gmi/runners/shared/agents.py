"""rl-games agents for the async roles, built from the run's unchanged train config. With
``config['env_info']`` rl-games creates no env: a trainer gets none, an actor one around its own
VecTask (actions sampled, clipped and rescaled exactly as in sync mode).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from isaacgymenvs_gmi.placement.run_plan import RunPlan


def env_info(plan: RunPlan) -> dict[str, Any]:
    """The spaces rl-games builds its network from (IsaacGymEnvs' VecTask spaces)."""
    import gymnasium as gym
    import numpy as np

    obs, states, actions = plan.dims
    info: dict[str, Any] = {
        "observation_space": gym.spaces.Box(-np.inf, np.inf, (obs,), np.float32),
        "action_space": gym.spaces.Box(-1.0, 1.0, (actions,), np.float32),
        "agents": 1,
    }
    if plan.train.central_value:
        info["state_space"] = gym.spaces.Box(-np.inf, np.inf, (states,), np.float32)
    return info


def build_agent(
    plan: RunPlan,
    *,
    rl_device: str,
    seed: int,
    threads: int,
    make: Callable[..., Any],
    train_dir: str | None = None,
    vec_env: Any = None,
    observer: Any = None,
    acting_only: bool = False,
) -> Any:
    """``make(base_name=..., params=...)`` with the run's rl-games params (``train_dir``
    replaces the run folder). An agent ``acting_only`` never trains: its minibatch is its whole
    batch (rl-games checks the geometry at construction)."""
    from rl_games.common.algo_observer import DefaultAlgoObserver
    from rl_games.torch_runner import Runner

    from isaacgymenvs_gmi.rl.observer import ObserverChain
    from isaacgymenvs_gmi.rl.train_config import rlgames_params

    params = rlgames_params(
        plan.train_params,
        plan.train,
        rl_device=rl_device,
        seed=seed,
        num_envs=plan.num_envs,
        threads=threads,
        train_dir=train_dir,
    )
    config = params["config"]
    config["env_info"] = env_info(plan)
    if acting_only:
        config.pop("minibatch_size_per_env", None)
        config["minibatch_size"] = config["horizon_length"] * plan.num_envs
    default = DefaultAlgoObserver()
    runner = Runner(default if observer is None else ObserverChain(default, observer))
    runner.load({"params": params})
    runner.params["config"]["vec_env"] = vec_env  # after load: it deep-copies the params
    return make(base_name="run", params=runner.params)


def policy_modules(agent: Any) -> list:
    """The modules actors must hold identically to the trainer: the policy (with its
    normalisers) and, when configured, the central value net."""
    central = getattr(agent, "central_value_net", None)
    return [agent.model, *([central] if getattr(agent, "has_central_value", False) else [])]
