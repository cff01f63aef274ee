"""Ant on this machine at equal total envs: 1, 2 and 3 GMIs, total env steps/s and reward over
wall time. Target: per_gpu=2 and 3 reach >= 1.3x the env steps/s of per_gpu=1 (one GMI's update
overlaps another's simulation).

Every layout trains the same total batch per epoch with the same number of updates: T GMIs of
TOTAL/T envs each, minibatch scaled by 1/T, gradients averaged across GMIs. Throughput counts all
GMIs' env steps over rl-games' own clock from epoch 3 on. Runs alternate between layouts.

    python bench/gmi_scaling.py [--total-envs 1536] [--epochs 50] [--repeats 1]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, compose, median, write_result

from isaacgymenvs_gmi.launch import plan_run, run


def one_run(per_gpu: int, total_envs: int, epochs: int) -> dict:
    envs = total_envs // per_gpu
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(
            "task=Ant",
            f"num_envs={envs}",
            f"train.params.config.minibatch_size={envs * 8}",
            f"max_iterations={epochs}",
            f"gmi.per_gpu={per_gpu}",
            f"train_dir={d}",
            "train.params.config.save_frequency=0",
        )
        result = run(cfg, plan_run(cfg))
    hist = result.history  # GMI 0: (the run's frames, all GMIs, rl-games clock s, mean reward)
    (f0, t0, _), (f1, t1, _) = hist[2], hist[-1]
    return {
        "per_gpu": per_gpu,
        "envs_per_gmi": envs,
        "env_steps_per_s": (f1 - f0) / (t1 - t0),
        "curve": list(hist),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-envs", type=int, default=1536)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args()
    runs: dict[int, list[dict]] = {1: [], 2: [], 3: []}
    for _ in range(args.repeats):
        for t in runs:
            runs[t].append(one_run(t, args.total_envs, args.epochs))
            print(f"per_gpu={t}: {runs[t][-1]['env_steps_per_s']:,.0f} env steps/s", flush=True)
    base = median([r["env_steps_per_s"] for r in runs[1]])
    ratios = {t: median([r["env_steps_per_s"] for r in rs]) / base for t, rs in runs.items()}
    for t in (2, 3):
        print(
            f"Ant, {args.total_envs} envs in total: per_gpu={t} / per_gpu=1 = {ratios[t]:.2f} "
            f"(target >= 1.3)"
        )
    write_result(
        "gmi_scaling",
        {
            "total_envs": args.total_envs,
            "epochs": args.epochs,
            "ratios_vs_one_gmi": ratios,
            "target": 1.3,
            "runs": runs,
        },
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for t, rs in runs.items():
        curve = rs[-1]["curve"]
        ax.plot([c[1] for c in curve], [c[2] for c in curve], label=f"per_gpu={t}")
    ax.set(
        title=f"Ant, {args.total_envs} envs in total, CPU GMIs",
        xlabel="training time [s]",
        ylabel="mean episode reward (GMI 0)",
    )
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(RESULTS / "gmi_scaling.png", dpi=110)


if __name__ == "__main__":
    main()
