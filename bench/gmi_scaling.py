"""Ant on this machine at equal total envs: 1, 2 and 3 GMIs, total env steps/s and reward over
wall time. Target: per_gpu=2 and 3 reach >= 1.3x the env steps/s of per_gpu=1 (one GMI's update
overlaps another's simulation).

Every layout trains the same total batch per epoch with the same number of updates: T GMIs of
TOTAL/T envs each, minibatch scaled by 1/T, gradients averaged across GMIs. Throughput counts all
GMIs' env steps over the wall time of each epoch (play, update and what keeps GMIs in step
between epochs), leaving out the first ``--warmup`` epochs; a run's figure is its env steps over
its measured time. Runs alternate between layouts; the ratios compare medians.

With more GMIs than cores the placement matters (``gmi.cores``): ``pinned`` gives some cores two
GMIs and others one, ``shared`` lets every GMI run on every core with single-thread pools; both
run for per_gpu=3 (the targets of the placement fix: >= 0.9 of one GMI).

    python bench/gmi_scaling.py [--total-envs 1536] [--epochs 30] [--warmup 5] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, compose, median, write_result

from isaacgymenvs_gmi.launch import plan_run, run

LAYOUTS = ("1", "2", "3/pinned", "3/shared")  # per_gpu[/gmi.cores]


def one_run(layout: str, total_envs: int, epochs: int, warmup: int) -> dict:
    per_gpu, _, cores = layout.partition("/")
    per_gpu = int(per_gpu)
    envs = total_envs // per_gpu
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(
            "task=Ant",
            f"num_envs={envs}",
            f"train.params.config.minibatch_size={envs * 8}",
            f"max_iterations={epochs}",
            f"gmi.per_gpu={per_gpu}",
            f"gmi.cores={cores or 'auto'}",
            f"train_dir={d}",
            "train.params.config.save_frequency=0",
        )
        result = run(cfg, plan_run(cfg))
    measured = result.epoch_rates[warmup:]  # all GMIs' env steps/s per epoch, wall time
    split = result.epoch_split[warmup:]  # per epoch: stage -> seconds on each GMI
    return {
        "epoch_split_s": {  # per stage, the median over epochs of the slowest GMI's seconds
            stage: round(median([max(row[stage]) for row in split]), 4) for stage in split[0]
        }
        if split
        else {},
        "per_gpu": per_gpu,
        "cores": cores or "auto",
        "envs_per_gmi": envs,
        "env_steps_per_s": len(measured) / sum(1.0 / r for r in measured),
        "epoch_rates": result.epoch_rates,
        "curve": list(result.history),  # (frames, rl-games clock s, mean reward)
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-envs", type=int, default=1536)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    runs: dict[str, list[dict]] = {layout: [] for layout in LAYOUTS}
    for _ in range(args.repeats):
        for layout, got in runs.items():
            got.append(one_run(layout, args.total_envs, args.epochs, args.warmup))
            print(f"per_gpu={layout}: {got[-1]['env_steps_per_s']:,.0f} env steps/s", flush=True)
    base = median([r["env_steps_per_s"] for r in runs["1"]])
    ratios = {t: median([r["env_steps_per_s"] for r in rs]) / base for t, rs in runs.items()}
    splits = {
        t: {s: median([r["epoch_split_s"][s] for r in rs]) for s in rs[0]["epoch_split_s"]}
        for t, rs in runs.items()
    }
    for t in LAYOUTS[1:]:
        print(f"Ant, {args.total_envs} envs in total: per_gpu={t} / per_gpu=1 = {ratios[t]:.2f}")
    for t, split in splits.items():
        parts = ", ".join(f"{s} {v:.3f}" for s, v in split.items())
        print(f"per_gpu={t} epoch split (slowest GMI, median s): {parts}")
    write_result(
        "gmi_scaling",
        {
            "command": "python bench/gmi_scaling.py --total-envs "
            f"{args.total_envs} --epochs {args.epochs} --warmup {args.warmup} "
            f"--repeats {args.repeats}",
            "total_envs": args.total_envs,
            "epochs": args.epochs,
            "warmup_epochs": args.warmup,
            "measure": "all GMIs' env steps over the wall time of the epochs after warm-up",
            "ratios_vs_one_gmi": ratios,
            "epoch_split_s": splits,
            "targets": {"3 vs 1 after the placement fix": 0.9, "overlap (paper)": 1.3},
            "before": {
                "measure": "rl-games' play+update clock from epoch 3 (warm-up partly included)",
                "ratios_vs_one_gmi": {"2": 1.01, "3/pinned": 0.74, "3/shared": 0.87},
            },
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
