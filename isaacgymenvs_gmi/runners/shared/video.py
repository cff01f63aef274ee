"""GMI 0's video recorder for ``capture_video`` (and to wandb when it is on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.rl.wandb_observer import WandbObserver
from isaacgymenvs_gmi.sim.vec_task import VecTask
from isaacgymenvs_gmi.sim.video import VideoRecorder


def video_recorder(
    plan: RunPlan, env: VecTask, observer: Any, wandb: WandbObserver | None
) -> VideoRecorder:
    """A recorder of ``env``'s env 0 at the env's own rate. Videos go to ``<run folder>/videos``
    (``<train_dir>/videos`` when playing, which has no run folder)."""

    def folder() -> Path:
        run = getattr(getattr(observer, "algo", None), "experiment_dir", None)
        return Path(run or plan.train.train_dir) / "videos"

    fps = 1.0 / (env.dt * env.control_freq_inv)
    on_video = wandb.log_video if wandb is not None else None
    return VideoRecorder(env.model, plan.video, fps, folder, on_video)
