"""The run's wandb observer, for the one GMI that logs (GMI 0, the lead trainer in async mode)."""

from __future__ import annotations

from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.rl.wandb_observer import WandbObserver


def wandb_for(plan: RunPlan, logs: bool) -> WandbObserver | None:
    """A :class:`WandbObserver` when ``wandb_activate`` is on, this GMI ``logs`` and the run
    trains (playing logs nothing); else None."""
    if not (plan.wandb.activate and logs and not plan.test):
        return None
    return WandbObserver(plan.wandb, plan.run_config or {}, plan.train.train_dir)
