"""The entry each job of a packed sweep runs (:mod:`isaacgymenvs_gmi.sweep`): ``python -m
isaacgymenvs_gmi.sweep_job --result FILE [--cores 0,1] -- <train.py arguments>``.

It takes the stop signals first (the launcher started it with them held back), binds itself to
its cores and says which (the first line of its log), asks for SIGTERM should the launcher die
(a checkpoint at the next epoch), and runs the command line as ``train.py`` would, which writes
the run's result to FILE for the launcher to hand to Hydra.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence


def _cores(text: str) -> set[int]:
    try:
        return {int(c) for c in text.split(",")}
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected core numbers like 0,1") from None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m isaacgymenvs_gmi.sweep_job",
        description="One job of a packed sweep: train.py's arguments after --.",
    )
    p.add_argument("--result", required=True, help="where the run writes its result (JSON)")
    p.add_argument("--cores", type=_cores, default=None, help="cores to bind to, e.g. 0,1")
    p.add_argument("train_args", nargs=argparse.REMAINDER, help="-- then train.py's arguments")
    return p


def main(argv: Sequence[str] | None = None) -> None:
    from isaacgymenvs_gmi.gmi.stop import STARTUP, unblock_stop_signals

    STARTUP.install()
    unblock_stop_signals()
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    rest = args.train_args[1:] if args.train_args[:1] == ["--"] else args.train_args
    from isaacgymenvs_gmi.gmi.worker import die_with_parent
    from isaacgymenvs_gmi.sweep.job_result import RESULT_ENV

    die_with_parent(signal.SIGTERM)  # a launcher gone: stop at the next epoch, checkpointed
    if args.cores:
        os.sched_setaffinity(0, args.cores)
    print(f"sweep job: bound to cores {sorted(os.sched_getaffinity(0))}", flush=True)
    os.environ[RESULT_ENV] = args.result
    from isaacgymenvs_gmi.cli import main as train_main

    sys.argv = [sys.argv[0], *rest]
    train_main(rest)


if __name__ == "__main__":
    main()
