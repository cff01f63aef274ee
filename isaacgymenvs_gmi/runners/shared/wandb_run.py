"""The run's wandb observer, for the one GMI that logs, and the guard that finishes its run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.rl.wandb_observer import WandbObserver


def wandb_for(plan: RunPlan, logs: bool) -> WandbObserver | None:
    """A :class:`WandbObserver` when ``wandb_activate`` is on, this GMI ``logs`` and the run
    trains (playing logs nothing); else None."""
    if not (plan.wandb.activate and logs and not plan.test):
        return None
    return WandbObserver(plan.wandb, plan.run_config or {}, plan.train.train_dir)


@contextlib.contextmanager
def finishing(wandb: WandbObserver | None) -> Iterator[None]:
    """Finish ``wandb``'s run when the block ends (nothing when None): marked failed when the
    block raised. Close TensorBoard writers inside the block: their last scalars get synced."""
    try:
        yield
    except BaseException:
        if wandb is not None:
            wandb.finish(failed=True)
        raise
    if wandb is not None:
        wandb.finish()
