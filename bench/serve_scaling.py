"""Serving (gmi.mode=serve) Ant on this machine at equal total envs: predictions per second
with gmi.per_gpu 1, 2 and 3 over one process (per_gpu=1). Every GMI plays the initial policy on
TOTAL/per_gpu envs for the same number of steps; PPS counts every GMI's actions after its first
chunk over the slowest GMI's time. Runs alternate between layouts; ratios are of medians.

    python bench/serve_scaling.py [--total-envs 1536] [--steps 160] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile

from common import compose, median, write_result

from isaacgymenvs_gmi.launch import plan_run, run


def one_run(per_gpu: int, total_envs: int, steps: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(
            "task=Ant",
            "gmi.mode=serve",
            f"gmi.per_gpu={per_gpu}",
            f"num_envs={total_envs // per_gpu}",
            f"serve.steps={steps}",
            f"train_dir={d}",
        )
        return run(cfg, plan_run(cfg)).rates["pps"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-envs", type=int, default=1536)
    p.add_argument("--steps", type=int, default=160)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    runs: dict[int, list[float]] = {1: [], 2: [], 3: []}
    for _ in range(args.repeats):
        for t in runs:
            runs[t].append(one_run(t, args.total_envs, args.steps))
            print(f"per_gpu={t}: PPS {runs[t][-1]:,.0f}", flush=True)
    base = median(runs[1])
    ratios = {t: median(v) / base for t, v in runs.items()}
    for t in (2, 3):
        print(f"Ant serving, {args.total_envs} envs: per_gpu={t} / one process = {ratios[t]:.2f}")
    write_result(
        "serve_scaling",
        {
            "command": "python bench/serve_scaling.py "
            f"--total-envs {args.total_envs} --steps {args.steps} --repeats {args.repeats}",
            "ratios_over_one_process": ratios,
            "pps": runs,
        },
    )


if __name__ == "__main__":
    main()
