"""rl-games' params for one GMI: the run's train config as rl-games reads it, with the edits
every GMI makes (our progress line replaces rl-games' own; a GMI that must leave nothing in the
user's run folder writes into its scratch folder)."""

from __future__ import annotations

from typing import Any

from isaacgymenvs_gmi.placement.run_plan import RunPlan


def gmi_rlgames_params(
    plan: RunPlan, *, rl_device: str, seed: int, threads: int, train_dir: str | None = None
) -> dict[str, Any]:
    """``train.params`` for rl-games' Runner on this GMI's device, seed and threads;
    ``train_dir`` (when given) replaces the run folder."""
    from isaacgymenvs_gmi.rl.train_config import rlgames_params

    params = rlgames_params(
        plan.train_params,
        plan.train,
        rl_device=rl_device,
        seed=seed,
        num_envs=plan.num_envs,
        threads=threads,
    )
    params["config"]["print_stats"] = False  # the progress line replaces rl-games' fps line
    if train_dir is not None:
        params["config"]["train_dir"] = train_dir
    return params
