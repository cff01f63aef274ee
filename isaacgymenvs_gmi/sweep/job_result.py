"""What a run hands its sweep: written by ``train.py``'s run when a sweep job asks for it
(``$ISAACGYMENVS_GMI_JOB_RESULT``, set by :mod:`isaacgymenvs_gmi.sweep_job`), read by the
launcher for the job's ``JobReturn`` and the summary."""

from __future__ import annotations

import json
import math
import os
import signal
from pathlib import Path
from typing import Any

from isaacgymenvs_gmi.atomic_file import write_atomically

RESULT_ENV = "ISAACGYMENVS_GMI_JOB_RESULT"  # where a run writes its result (sweep jobs)


def job_result(result: Any, wall_s: float) -> dict[str, Any]:
    """What a run hands its sweep: best and final mean reward (None before an episode ended),
    frames, wall time, why it ended, its run folder and last checkpoint."""
    rewards = [r for _, _, r in result.history if r is not None and math.isfinite(r)]
    final = result.mean_reward
    final = final if final is not None and math.isfinite(final) else None
    return {
        "best_reward": max(rewards) if rewards else final,
        "final_reward": final,
        "frames": int(result.frames),
        "wall_s": round(wall_s, 3),
        "ended_by": result.ended_by,
        "stopped_by": None if result.stopped_by is None else signal.Signals(result.stopped_by).name,
        "run_dir": result.experiment_dir,
        "checkpoint": result.checkpoint,
    }


def write_result(summary: dict[str, Any]) -> None:
    """Write a run's :func:`job_result` where the sweep asked (``$ISAACGYMENVS_GMI_JOB_RESULT``),
    whole or not at all; nothing outside a sweep."""
    path = os.environ.get(RESULT_ENV)
    if path:
        write_atomically(Path(path), json.dumps(summary, indent=1).encode())
