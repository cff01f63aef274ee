"""Search a task's GMI configuration and print what to run:

    python -m isaacgymenvs_gmi.planner task=Ant [overrides ...] [--out DIR]

Overrides are ``train.py``'s. Without ``gmi.per_gpu=auto`` or ``num_envs=auto`` among them,
``gmi.per_gpu=auto`` is searched. Prints the search table (candidate, env steps/s, memory, Sat,
projection, decision), writes it as JSON and a plot to ``DIR`` (default: the current folder),
and prints the ``train.py`` command line of the choice. A cached search is shown as stored;
``gmi.plan.replan=true`` searches again.
"""

from __future__ import annotations

import json
import logging
import shlex
import sys
from pathlib import Path

PLANNED_KEYS = (  # what the printed command line sets from the choice, or no longer needs
    "gmi.per_gpu=",
    "num_envs=",
    "train.params.config.minibatch_size=",
    "gmi.cores=",
    "gmi.plan.",
)


def main(argv: list[str]) -> int:
    out_dir = Path(".")
    overrides = []
    for arg in argv:
        if arg.startswith("--out="):
            out_dir = Path(arg.split("=", 1)[1])
        elif arg in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            overrides.append(arg)
    if not any(a in ("gmi.per_gpu=auto", "num_envs=auto") for a in overrides):
        overrides.append("gmi.per_gpu=auto")
    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s")
    from isaacgymenvs_gmi.config import ConfigError
    from isaacgymenvs_gmi.config.compose import compose_config

    from . import NoRunnableCandidate, choose
    from .report import plot, table

    try:
        choice = choose(compose_config(*overrides))  # the config train.py would see
    except (ConfigError, NoRunnableCandidate) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2 if isinstance(err, ConfigError) else 1
    rows = choice.result["rows"]
    print(table(rows))
    kept = [a for a in overrides if not a.startswith(PLANNED_KEYS)]
    command = "python train.py " + " ".join(shlex.quote(a) for a in kept + choice.overrides())
    task = choice.cfg.task_name
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"plan-{task}.json"
    cached = {"from_cache": choice.from_cache, "cache": str(choice.cache_path)}
    entry = {"task": task, "overrides": overrides, "command": command, **cached, **choice.result}
    json_path.write_text(json.dumps(entry, indent=2) + "\n")
    png = plot(rows, f"{task}: candidates on one device", out_dir / f"plan-{task}.png")
    print(f"wrote {json_path} and {png}")
    print(f"run it with:\n  {command}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
