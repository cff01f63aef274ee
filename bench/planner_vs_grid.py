"""The planner's pick against an exhaustive grid measured in the same run (Ant, GMIs per device
1-4 with the total number of envs fixed; on a crowded CPU device both placements).

The grid runs every candidate the planner could choose as a longer trial (``--grid-epochs``, the
first ``--warmup`` left out), through the same trial runner; then the planner searches with its
default settings (``gmi.per_gpu=auto``, a fresh cache). Reported:

- throughput of the pick / best of the grid, both as the grid measured them (target >= 0.95);
- search time / grid time.

    python bench/planner_vs_grid.py [--total-envs 1536] [--grid-epochs 30] [--warmup 5]
"""

from __future__ import annotations

import argparse
import io
import tempfile
import time

from common import RESULTS, compose, write_result

from isaacgymenvs_gmi.config.plan import PlanSettings
from isaacgymenvs_gmi.placement.cpu_sets import usable_cores
from isaacgymenvs_gmi.placement.machine_limits import MEMORY_SHARE, available_memory
from isaacgymenvs_gmi.planner import choose
from isaacgymenvs_gmi.planner.candidates import shapes
from isaacgymenvs_gmi.planner.memory import MIB
from isaacgymenvs_gmi.planner.resolve import check_request
from isaacgymenvs_gmi.planner.search import Candidate
from isaacgymenvs_gmi.planner.trial import TrialSetup, run_trial


def overrides(total: int, cache: str) -> list[str]:
    return [
        "task=Ant",
        "gmi.per_gpu=auto",
        f"num_envs={total}",
        f"train.params.config.minibatch_size={total * 8}",  # two minibatches per epoch
        "gmi.plan.max_per_gpu=4",
        "gmi.plan.replan=true",
        f"gmi.plan.cache_dir={cache}",
    ]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-envs", type=int, default=1536)
    p.add_argument("--grid-epochs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        cfg = compose(*overrides(args.total_envs, cache))
        settings, request, _ = check_request(cfg)
        cores = len(usable_cores())
        grid = [
            c
            for s in shapes(request, settings, gpu=False, device_cores=cores)
            for c in s.candidates()
        ]
        long = PlanSettings(epochs=args.grid_epochs, warmup_epochs=args.warmup, timeout_s=900)
        setup = TrialSetup(cfg, request, long, MEMORY_SHARE * available_memory() / MIB)
        measured: dict[Candidate, float] = {}
        start = time.monotonic()
        for cand in grid:
            prof = run_trial(setup, cand, 900.0)
            measured[cand] = prof.env_steps_per_s if prof.runnable else 0.0
            print(
                f"grid {cand.label()}: {measured[cand]:,.0f} env steps/s {prof.reason}", flush=True
            )
        grid_s = time.monotonic() - start

        printed = io.StringIO()
        start = time.monotonic()
        choice = choose(cfg, stream=printed)
        search_s = time.monotonic() - start
    print(printed.getvalue())
    best = max(measured, key=measured.get)
    pick = choice.candidate
    ratio = measured[pick] / measured[best]
    print(
        f"pick {pick.label()} / best of the grid {best.label()}: {ratio:.3f}; "
        f"search time / grid time: {search_s / grid_s:.2f} ({search_s:.0f} s / {grid_s:.0f} s)"
    )
    write_result(
        "planner_vs_grid",
        {
            "command": f"python bench/planner_vs_grid.py --total-envs {args.total_envs} "
            f"--grid-epochs {args.grid_epochs} --warmup {args.warmup}",
            "task": "Ant",
            "total_envs": args.total_envs,
            "grid": [{"candidate": c.label(), "env_steps_per_s": v} for c, v in measured.items()],
            "grid_best": best.label(),
            "pick": pick.label(),
            "pick_over_grid_best": ratio,
            "target_pick_over_grid_best": 0.95,
            "search_seconds": search_s,
            "grid_seconds": grid_s,
            "search_over_grid_time": search_s / grid_s,
            "planner_rows": choice.result["rows"],
            "planner_settings": {
                "epochs": settings.epochs,
                "warmup_epochs": settings.warmup_epochs,
                "alpha": settings.alpha,
            },
        },
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [c.label().replace(" num_envs=", "\n") for c in measured]
    colours = ["tab:green" if c == pick else "tab:blue" for c in measured]
    fig, ax = plt.subplots(figsize=(8, 3.8))
    ax.bar(names, list(measured.values()), color=colours)
    ax.set(
        title=f"Ant, {args.total_envs} envs per device: grid (green: planner's pick, "
        f"{ratio:.2f} of best)",
        ylabel="env steps/s",
    )
    ax.tick_params(axis="x", labelsize=8)
    ax.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    fig.savefig(RESULTS / "planner_vs_grid.png", dpi=110)


if __name__ == "__main__":
    main()
