"""The entry each job of a packed sweep runs: ``python -m isaacgymenvs_gmi.sweep.job --result
FILE [--cores 0,1] -- <train.py arguments>``.

It takes the stop signals first (the launcher started it with them held back, so a Ctrl-C
forwarded meanwhile waits for the handler instead of raising), binds itself to its cores, asks to
be stopped gracefully should the launcher die (SIGTERM: a checkpoint at the next epoch), and runs
the command line as ``train.py`` would, which writes the run's result to FILE
(:func:`write_result`) for the launcher to hand to Hydra.
"""

from __future__ import annotations

import json
import math
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

RESULT_ENV = "ISAACGYMENVS_GMI_JOB_RESULT"  # where a run writes its result (sweep jobs)


def main(argv: Sequence[str] | None = None) -> None:
    from isaacgymenvs_gmi.gmi.stop import STARTUP, unblock_stop_signals

    STARTUP.install()
    unblock_stop_signals()
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    own, rest = args[:split], args[split + 1 :]
    options = dict(zip(own[::2], own[1::2], strict=False))
    from isaacgymenvs_gmi.gmi.worker import die_with_parent

    die_with_parent(signal.SIGTERM)  # a launcher gone: stop at the next epoch, checkpointed
    if options.get("--cores"):
        os.sched_setaffinity(0, {int(c) for c in options["--cores"].split(",")})
    os.environ[RESULT_ENV] = options["--result"]
    from isaacgymenvs_gmi.cli import main as train_main

    sys.argv = [sys.argv[0], *rest]
    train_main(rest)


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


def write_result(result: Any, wall_s: float) -> None:
    """Write :func:`job_result` where the sweep asked (``$ISAACGYMENVS_GMI_JOB_RESULT``), whole
    or not at all; nothing outside a sweep."""
    path = os.environ.get(RESULT_ENV)
    if not path:
        return
    from isaacgymenvs_gmi.atomic_file import write_atomically

    text = json.dumps(job_result(result, wall_s), indent=1)
    write_atomically(Path(path), text.encode())


if __name__ == "__main__":
    main()
