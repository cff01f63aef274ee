"""What every GMI does first, whatever its mode: rl-games' checkpoint functions made atomic and
safe to load, checkpoints stamped with the task, and the random number generators seeded."""

from __future__ import annotations

from isaacgymenvs_gmi.placement.run_plan import RunPlan


def prepare_gmi(plan: RunPlan, seed: int) -> None:
    """Patch rl-games' checkpoint functions (once per process), record ``plan``'s task for the
    checkpoints, and seed with ``seed`` (rl-games' own rank offset is never enabled)."""
    from isaacgymenvs_gmi.patches import apply_all, set_checkpoint_metadata

    from .seeding import seed_everything

    apply_all()
    set_checkpoint_metadata(task=plan.task_name)
    seed_everything(seed, plan.train.torch_deterministic)
