"""IsaacGymEnvs' top-level switches and ``pbt.*``: each honoured (:data:`HONOURED`), refused
naming the key, or named once as not applied with what to do instead; none dropped silently.
Isaac Gym / PhysX-only keys have their own line (:mod:`.ignored`). ``headless=False``,
``multi_gpu`` and, with PBT off, any ``pbt.*`` setting are named by :func:`not_applied`;
``pbt.enabled=True`` trains a population as ``gmi.mode=pbt`` (``runners/pbt`` checks its
settings).
"""

from __future__ import annotations

from typing import Any

from ._values import select
from .schema import Flag

HONOURED = (
    "task_name",
    "experiment",
    "num_envs",
    "seed",
    "torch_deterministic",
    "max_iterations",
    "sim_device",
    "rl_device",
    "test",
    "checkpoint",
    "sigma",
    "wandb_activate",
    "wandb_group",
    "wandb_name",
    "wandb_entity",
    "wandb_project",
    "wandb_tags",
    "wandb_logcode_dir",
    "capture_video",
    "capture_video_freq",
    "capture_video_len",
    "force_render",  # rendering happens only when a video is recorded, as upstream without a viewer
)
NAMED = ("headless", "multi_gpu", "pbt")  # see not_applied()
PBT_OFF_KEYS = ("enabled", "policy_idx")  # what a PBT-off config (pbt=no_pbt) carries


def pbt_enabled(cfg: Any) -> bool:
    """Whether ``pbt.enabled`` asks for population-based training (a boolean or null)."""
    return bool(Flag(optional=True).check("pbt.enabled", select(cfg, "pbt.enabled")))


def not_applied(cfg: Any, *, under_torchrun: bool, gmis: int, devices: int) -> list[str]:
    """One line per switch that is accepted but does not do what it does upstream, saying what
    happens instead. ``gmis``/``devices``: this run's GMIs and the devices they use."""
    lines = []
    if select(cfg, "headless", True) is False:
        lines.append(
            "headless=False: there is no viewer window with the MuJoCo backends (the run is "
            "headless); capture_video=True records env 0 to watch the policy"
        )
    multi_gpu = bool(select(cfg, "multi_gpu", False))
    split = f"{gmis} GMI{'s' if gmis != 1 else ''} on {devices} device{'s' if devices != 1 else ''}"
    if multi_gpu and not under_torchrun:
        lines.append(
            f"multi_gpu=True without torchrun: this machine's {split} train the run (set by "
            "gmi.per_gpu and gmi.num_gpus; rl-games' own multi-GPU mode is never used); to "
            "train across machines, launch with torchrun"
        )
    if under_torchrun and not multi_gpu:
        lines.append(
            f"multi_gpu=False under torchrun: the ranks still train one policy together, as {split}"
        )
    pbt = {} if pbt_enabled(cfg) else select(cfg, "pbt", None) or {}
    extra = sorted(k for k in pbt if k not in PBT_OFF_KEYS)
    if pbt and select(cfg, "pbt.policy_idx", 0) not in (0, None):
        extra.insert(0, "policy_idx")
    if extra:
        lines.append(
            f"pbt.{', pbt.'.join(extra)}: not applied, population-based training is off "
            "(pbt.enabled=False)"
        )
    return lines
