"""A seed sweep packed onto GMIs against Hydra's basic launcher, which runs the jobs one after
another: ``python train.py -m task=Ant seed=1,2,3,4 ...`` with and without
``hydra/launcher=gmi``, the same jobs and settings.

Measured per variant: the whole sweep's wall time (process start to exit), and per job its final
mean episode reward (rl-games' ``rewards/iter`` in the job's TensorBoard summaries, the same
measure for both). The ratio printed is sequential wall time over packed wall time, measured in
the same call; the variants alternate over ``--rounds``. Same seeds, so the rewards must agree
within seed noise (threads per job differ: one job on every core, or a share of them).

    python bench/sweep_packing.py [--rounds 1] [--seeds 1 2 3 4] [--per-gpu 2] [overrides ...]
    python bench/sweep_packing.py --gpu    # the task's own settings, MPS-packed vs sequential

Writes bench/results/sweep_packing[_gpu].{json,png}.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, machine, read_scalars, timed_sweep, write_result  # noqa: E402

CPU_SETTINGS = [  # the README's make train sizes, shorter
    "num_envs=512",
    "train.params.config.minibatch_size=4096",
    "max_iterations=100",
]


def final_rewards(runs: Path, packed: bool) -> list[float | None]:
    """Final ``rewards/iter`` of each job, in job order: a packed job's runs are under
    ``runs/<job>/`` (an absolute train_dir gets the job number), the basic launcher's run
    folders share ``runs/`` and are in start order (one job after another)."""
    if packed:
        jobs = sorted((p for p in runs.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
        summaries = [next(job.glob("*/summaries"), None) for job in jobs]
    else:
        summaries = sorted(runs.glob("*/summaries"), key=lambda p: p.parent.stat().st_ctime)
    out = []
    for folder in summaries:
        rewards = read_scalars(folder, "rewards/iter") if folder else []
        out.append(round(rewards[-1][1], 2) if rewards else None)
    return out


def sweep(args, packed: bool, out: Path) -> dict:
    folder = out / ("packed" if packed else "sequential")
    shutil.rmtree(folder, ignore_errors=True)
    seeds = ",".join(str(s) for s in args.seeds)
    cmd = [sys.executable, "train.py", "-m", f"task={args.task}", f"seed={seeds}"]
    cmd += args.settings + [f"hydra.sweep.dir={folder}", f"train_dir={folder / 'runs'}"]
    if packed:
        cmd += ["hydra/launcher=gmi", f"hydra.launcher.per_gpu={args.per_gpu}"]
    name = "packed" if packed else "sequential"
    wall, shown = timed_sweep(cmd, name, out / f"{folder.name}.log", out)
    rewards = final_rewards(folder / "runs", packed)
    print(f"   {wall:.1f} s; final rewards by seed {rewards}", flush=True)
    return {"wall_s": round(wall, 2), "final_rewards": rewards, "command": f"python {shown}"}


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
    walls = [result["sequential_wall_s"], result["packed_wall_s"]]
    left.bar(
        ["basic launcher\n(one at a time)", f"hydra/launcher=gmi\n({result['per_gpu']} at a time)"],
        walls,
    )
    left.set(
        ylabel="sweep wall time [s]", title=f"{len(result['seeds'])} seeds: {result['ratio']:.2f}x"
    )
    x = range(len(result["seeds"]))
    for offset, name in ((-0.2, "sequential"), (0.2, "packed")):
        values = [v or 0.0 for v in result["rounds"][-1][name]["final_rewards"]]
        right.bar([i + offset for i in x], values, width=0.4, label=name)
    right.set(xticks=list(x), xticklabels=[f"seed {s}" for s in result["seeds"]])
    right.set(ylabel="final mean reward", title="same seeds, last round")
    right.legend()
    fig.suptitle(f"{result['task']} seed sweep ({result['card']})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="Ant")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--per-gpu", type=int, default=2, help="packed jobs per device")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--gpu", action="store_true", help="the task's own settings, MPS")
    parser.add_argument("--out", type=Path, default=Path("/tmp/sweep_packing"))
    parser.add_argument("overrides", nargs="*", help="more train.py overrides")
    args = parser.parse_args()
    args.settings = ([] if args.gpu else CPU_SETTINGS) + args.overrides
    args.out.mkdir(parents=True, exist_ok=True)
    rounds = []
    for _ in range(args.rounds):  # alternate, so drift in the machine hits both alike
        rounds.append(
            {"sequential": sweep(args, False, args.out), "packed": sweep(args, True, args.out)}
        )
    sequential = statistics.median(r["sequential"]["wall_s"] for r in rounds)
    packed = statistics.median(r["packed"]["wall_s"] for r in rounds)
    facts = machine()
    result = {
        "task": args.task,
        "seeds": args.seeds,
        "per_gpu": args.per_gpu,
        "settings": args.settings,
        "card": (facts.get("gpu") or "CPU, no GPU").split(",")[0]
        if args.gpu
        else facts.get("cpu", "CPU"),
        "sequential_wall_s": sequential,
        "packed_wall_s": packed,
        "ratio": round(sequential / packed, 3),
        "rounds": rounds,
    }
    print(f"sequential / packed wall time: {result['ratio']:.3f}x", flush=True)
    name = "sweep_packing_gpu" if args.gpu else "sweep_packing"
    plot(result, ROOT / "bench" / "results" / f"{name}.png")
    write_result(name, result)


if __name__ == "__main__":
    main()
