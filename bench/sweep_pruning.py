"""Does stopping a sweep's losers early pay, and does it keep the winner? The same 12-job
learning-rate sweep of Cartpole, 2 jobs at a time (``hydra/launcher=gmi``), without pruning and
with each pruner asked for (``hydra.launcher.prune``), in one call.

The grid is 12 learning rates, log-spaced from 1e-7 to 3e-2, held fixed (``lr_schedule=identity``:
rl-games' adaptive schedule multiplies the rate by 1.5 whenever the KL is low and reaches the
same rate from any start) and listed in a fixed shuffled order (as a random search would try
them: a pruner judges each job against those before it, so a grid listed from worst to best
leaves it little to stop). Measured per variant: the sweep's wall time
(process start to exit) and, from its ``summary.json``, the best config (the job with the highest
best mean reward) and its reward; per job its status, epochs and wall time. Target: pruned wall
time <= 1/2 of unpruned, the same best config (or one within the seeds' noise, stated). Where a
pruned sweep's best config differs from the unpruned one's, both configs are trained again with
``--noise-seeds`` more seeds (one packed seed sweep) and their best rewards compared: the pruned
pick is as good when its mean is at most twice the larger standard deviation below the other's.

    python bench/sweep_pruning.py [--prune halving median] [--epochs 150] [--envs 256]
        [--warmup 5] [--noise-seeds 3]

Writes bench/results/sweep_pruning.{json,png}.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import RESULTS, ROOT, timed_sweep, write_result  # noqa: E402

RATES = [f"{m}e-{e}" for e in range(7, 1, -1) for m in (1, 3)]  # 1e-7 ... 3e-2
ORDER_SEED = 0


def grid() -> list[str]:
    rates = list(RATES)
    random.Random(ORDER_SEED).shuffle(rates)
    return rates


def command(args, folder: Path, *swept: str) -> list[str]:
    """A packed Cartpole sweep, 2 jobs at a time, of ``swept`` (overrides) into ``folder``."""
    return [
        sys.executable,
        "train.py",
        "-m",
        "task=Cartpole",
        f"num_envs={args.envs}",
        f"train.params.config.minibatch_size={args.envs * 8}",
        f"max_iterations={args.epochs}",
        "train.params.config.save_frequency=0",
        "train.params.config.lr_schedule=identity",  # adaptive would erase the grid
        "hydra/launcher=gmi",
        "hydra.launcher.per_gpu=2",
        *swept,
        f"hydra.sweep.dir={folder}",
    ]


def sweep(args, prune: str, out: Path) -> dict:
    folder = out / prune
    shutil.rmtree(folder, ignore_errors=True)
    cmd = command(
        args,
        folder,
        f"train.params.config.learning_rate={','.join(grid())}",
        f"hydra.launcher.prune={prune}",
        f"hydra.launcher.warmup_epochs={args.warmup}",
    )
    wall, shown = timed_sweep(cmd, prune, out / f"{prune}.log", out)
    rows = json.loads((folder / "summary.json").read_text())
    best = rows[0]  # ranked by the objective (best mean reward)
    jobs = [
        {
            "job": r["job"],
            "learning_rate": r["overrides"].split("=")[-1],
            "status": r["status"],
            "pruned": r["pruned"],
            "best_reward": r["best_reward"],
            "frames": r["frames"],
            "started": r["started"],
            "ended": r["ended"],
        }
        for r in sorted(rows, key=lambda r: r["job"])
    ]
    t_start = min(j["started"] for j in jobs if j["started"])
    for j in jobs:  # seconds since the first job started
        j["started"], j["ended"] = (round(j[k] - t_start, 2) for k in ("started", "ended"))
    summary = {
        "wall_s": round(wall, 2),
        "best_config": best["overrides"],
        "best_reward": best["best_reward"],
        "pruned_jobs": sum(j["status"] == "pruned" for j in jobs),
        "command": f"python {shown}",
        "jobs": jobs,
    }
    print(
        f"   {wall:.1f} s; best {best['overrides']} reward {best['best_reward']:.1f}; "
        f"{summary['pruned_jobs']} of {len(jobs)} jobs pruned",
        flush=True,
    )
    return summary


def seed_noise(args, rates: list[str], out: Path) -> dict:
    """Best reward of each learning rate in ``rates`` over ``--noise-seeds`` seeds (one packed
    sweep): {rate: {"rewards": [...], "mean": m, "std": s}}."""
    seeds = ",".join(str(s) for s in range(1, args.noise_seeds + 1))
    folder = out / "noise"
    swept = [f"train.params.config.learning_rate={','.join(rates)}", f"seed={seeds}"]
    cmd = command(args, folder, *swept)
    print(f"== seed noise: {' '.join(cmd[1:]).replace(str(out), 'OUT')}", flush=True)
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"seed sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    rows = json.loads((folder / "summary.json").read_text())
    found: dict = {}
    for r in rows:
        rate = next(o.split("=")[1] for o in r["overrides"].split() if "learning_rate" in o)
        found.setdefault(rate, []).append(r["best_reward"])
    return {
        rate: {
            "rewards": rewards,
            "mean": statistics.mean(rewards),
            "std": statistics.stdev(rewards) if len(rewards) > 1 else 0.0,
        }
        for rate, rewards in found.items()
    }


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    variants = list(results)
    fig, axes = plt.subplots(1, len(variants), figsize=(4.6 * len(variants), 3.8), sharex=True)
    for ax, name in zip(axes, variants, strict=True):
        for j in results[name]["jobs"]:
            color = {"done": "tab:green", "pruned": "tab:red"}.get(j["status"], "tab:grey")
            ax.barh(j["job"], j["ended"] - j["started"], left=j["started"], color=color)
            ax.text(j["ended"] + 0.5, j["job"], j["learning_rate"], va="center", fontsize=7)
        ax.set(
            title=f"{name}: {results[name]['wall_s']:.0f} s",
            xlabel="seconds since the sweep's first job started",
            ylabel="job",
        )
        ax.invert_yaxis()
    fig.suptitle("Cartpole, 12 learning rates, 2 jobs at a time (red: pruned)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--prune", nargs="+", default=["halving"], help="pruners to measure")
    p.add_argument("--epochs", type=int, default=150)
    p.add_argument("--envs", type=int, default=256)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--noise-seeds", type=int, default=3)
    args = p.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as work:
        for prune in ["none", *args.prune]:
            results[prune] = sweep(args, prune, Path(work))
        rates = sorted({r["best_config"].split("=")[-1] for r in results.values()})
        noise = seed_noise(args, rates, Path(work)) if len(rates) > 1 else {}
    base = results["none"]
    verdicts = {}
    for prune in args.prune:
        r = results[prune]
        speedup = base["wall_s"] / r["wall_s"]
        same = r["best_config"] == base["best_config"]
        verdict = {"wall_time_ratio": round(speedup, 2), "same_best_config": same}
        if not same:  # as good over more seeds: not worse by more than twice their noise
            mine, theirs = (noise[x["best_config"].split("=")[-1]] for x in (r, base))
            spread = 2 * max(mine["std"], theirs["std"])
            verdict["as_good_within_seed_noise"] = mine["mean"] >= theirs["mean"] - spread
        verdicts[prune] = verdict
        print(
            f"{prune}: unpruned / pruned wall time {speedup:.2f} (target >= 2); best config "
            f"{r['best_config']} ({r['best_reward']:.1f}) against {base['best_config']} "
            f"({base['best_reward']:.1f}) unpruned: {'same' if same else 'different'}"
            + ("" if same else f", as good over more seeds: {verdict['as_good_within_seed_noise']}")
        )
    for rate, n in noise.items():
        seeds = len(n["rewards"])
        print(f"learning rate {rate} over {seeds} seeds: {n['mean']:.1f} +- {n['std']:.1f}")
    write_result(
        "sweep_pruning",
        {
            "grid": grid(),
            "epochs": args.epochs,
            "envs": args.envs,
            "warmup_epochs": args.warmup,
            "verdicts": verdicts,
            "seed_noise": noise,
            "sweeps": results,
        },
    )
    plot(results, RESULTS / "sweep_pruning.png")


if __name__ == "__main__":
    main()
