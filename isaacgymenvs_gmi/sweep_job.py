"""The entry each job of a packed sweep runs (:mod:`isaacgymenvs_gmi.sweep`): ``python -m
isaacgymenvs_gmi.sweep_job --result FILE [--cores 0,1] -- <train.py arguments>``.

It takes the stop signals first (the launcher started it with them held back, so a Ctrl-C
forwarded meanwhile waits for the handler instead of raising), binds itself to its cores, asks to
be stopped gracefully should the launcher die (SIGTERM: a checkpoint at the next epoch), and runs
the command line as ``train.py`` would, which writes the run's result to FILE
(:func:`isaacgymenvs_gmi.sweep.job_result.write_result`) for the launcher to hand to Hydra.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    from isaacgymenvs_gmi.gmi.stop import STARTUP, unblock_stop_signals

    STARTUP.install()
    unblock_stop_signals()
    args = list(sys.argv[1:] if argv is None else argv)
    split = args.index("--") if "--" in args else len(args)
    own, rest = args[:split], args[split + 1 :]
    options = dict(zip(own[::2], own[1::2], strict=False))
    from isaacgymenvs_gmi.gmi.worker import die_with_parent
    from isaacgymenvs_gmi.sweep.job_result import RESULT_ENV

    die_with_parent(signal.SIGTERM)  # a launcher gone: stop at the next epoch, checkpointed
    if options.get("--cores"):
        os.sched_setaffinity(0, {int(c) for c in options["--cores"].split(",")})
    os.environ[RESULT_ENV] = options["--result"]
    from isaacgymenvs_gmi.cli import main as train_main

    sys.argv = [sys.argv[0], *rest]
    train_main(rest)


if __name__ == "__main__":
    main()
