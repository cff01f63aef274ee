"""Does PBT beat the same members trained independently, at equal wall time? Over several seeds.

Each seed runs a population of 3 members (one per GMI, ``pbt=pbt_default``) twice, with the
same seed, the same initial hyperparameter spread (each member's config mutated once, seeded by
seed + member), the same epochs (so the same env steps) and the same concurrency:

- ``pbt``: small PBT intervals, so the worst member takes better weights and mutates often;
- ``independent``: an interval larger than the run, so members never exchange anything.

The two variants alternate (order flipped every seed). Each output line is time-stamped as it
arrives; GMI 0's progress line gives the population's best objective against wall time since
launch (the closing summary adds the last point). Per seed: the best objective at equal wall
time (both curves at the end of the shorter one, and their mean over a common grid), the final
best objective, and the time to a threshold (``--threshold``, or 90% of the best objective seen
in any run); with ratios pbt / independent. Member m of seed s trains with seed s + m, so
populations of seeds fewer than 3 apart share members (identical in the independent variant).
Writes bench/results/pbt_population.json and .png.

    python bench/pbt_population.py [--seeds 1 11 21 31] [--epochs 60] [--task Cartpole]

A task other than Cartpole writes pbt_population_<task>.json / .png.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from common import RESULTS, ROOT, run_logged, write_result

VARIANTS = ("pbt", "independent")
COLOURS = {"pbt": "tab:red", "independent": "tab:blue"}
NEVER = 10**12  # env steps between decisions in the independent variant: never reached
SMALL_POPULATION = [  # the members' shared settings (PBT decisions every 2 epochs of 128 envs)
    "gmi.per_gpu=3",
    "num_envs=128",
    "train.params.config.minibatch_size=512",
    "++train.params.config.games_to_track=20",
    "pbt.start_after=0",
    "pbt.initial_delay=4096",
    "pbt.replace_fraction_worst=0.33",  # the worst 1 of 3 (rounded up)
    "pbt.replace_threshold_frac_std=0.1",
    "pbt.replace_threshold_frac_absolute=0.3",
    "pbt.mutation_rate=1.0",
]
PROGRESS = re.compile(r"\[PBT x\d+\] .*epoch (\d+)/\d+ frames ([\d,]+) \|")
BEST = re.compile(r"population best ([-\d.]+) \(member (\d+)\)")
SUMMARY = re.compile(r"PBT population of \d+: best member (\d+) \(objective ([-\d.]+)\)")
MEMBER = re.compile(r"  member (\d+)\D*: objective (\S+), .* replaced (\d+)x, mutated (\d+)x")
REPLACED = re.compile(r"^\[PBT\] member \d+: replaced by member")
MUTATES = re.compile(r"^\[PBT\] member \d+: mutates")
ODD = re.compile(r"warning|error|traceback|exception|nan\b|inf\b", re.IGNORECASE)


def command(
    task: str, mutation: str, variant: str, seed: int, epochs: int, pbt_interval: int
) -> list[str]:
    interval = pbt_interval if variant == "pbt" else NEVER
    return [
        "train.py",
        f"task={task}",
        "pbt=pbt_default",
        f"pbt/mutation={mutation}",
        *SMALL_POPULATION,
        f"pbt.interval_steps={interval}",
        f"max_iterations={epochs}",
        f"seed={seed}",
    ]


def run_once(args: list[str], limit_s: float) -> dict:
    with tempfile.TemporaryDirectory() as d:
        cmd = [sys.executable, *args, f"train_dir={d}/runs"]
        rows, code, t0 = run_logged(cmd, Path(d) / "log.txt", limit_s)
        wall = time.monotonic() - t0
    curve, summary, members, odd = [], None, [], []
    for t, line in rows:
        if PROGRESS.search(line) and (best := BEST.search(line)):
            curve.append((round(t, 3), float(best.group(1))))
        elif match := SUMMARY.search(line):
            summary = (round(t, 3), int(match.group(1)), float(match.group(2)))
        elif match := MEMBER.search(line):
            members.append([int(match.group(1)), match.group(2), *map(int, match.group(3, 4))])
        if ODD.search(line) and not line.startswith("[PBT]"):
            odd.append(line.strip())
    if code != 0 or summary is None:
        tail = "\n".join(line for _, line in rows[-30:])
        raise RuntimeError(f"{' '.join(args)}: exit code {code}, summary {summary}\n{tail}")
    curve.append((summary[0], summary[2]))  # the population's final state
    return {
        "wall_s": round(wall, 3),
        "exit_code": code,
        "final_best": summary[2],
        "final_best_member": summary[1],
        "replace_events": sum(bool(REPLACED.search(line)) for _, line in rows),
        "mutate_events": sum(bool(MUTATES.search(line)) for _, line in rows),
        "members": [
            {"member": m, "objective": None if o == "-" else float(o), "replaced": r, "mutated": u}
            for m, o, r, u in members
        ],
        "odd_lines": sorted(set(odd)),
        "curve": curve,  # (s since launch, population best objective)
    }


def value_at(curve: list, times: np.ndarray) -> np.ndarray:
    """The curve's latest value at or before each time (NaN before its first point)."""
    ts, vs = np.array([t for t, _ in curve]), np.array([v for _, v in curve])
    i = np.searchsorted(ts, times, side="right") - 1
    return np.where(i >= 0, vs[np.clip(i, 0, None)], np.nan)


def time_to(curve: list, threshold: float) -> float | None:
    return next((t for t, v in curve if v >= threshold), None)


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def compare(runs: dict, threshold: float, grid_points: int) -> dict:
    """Per-seed figures of both variants, and pbt / independent."""
    pbt, ind = runs["pbt"]["curve"], runs["independent"]["curve"]
    end = min(pbt[-1][0], ind[-1][0])
    grid = np.linspace(max(pbt[0][0], ind[0][0]), end, grid_points)
    out: dict = {"equal_time_s": end, "grid_s": [float(grid[0]), float(grid[-1])]}
    for name, curve in (("pbt", pbt), ("independent", ind)):
        out[name] = {
            "best_at_equal_time": float(value_at(curve, np.array([end]))[0]),
            "mean_best_over_grid": float(np.mean(value_at(curve, grid))),
            "final_best": runs[name]["final_best"],
            "time_to_threshold_s": time_to(curve, threshold),
            "wall_s": runs[name]["wall_s"],
        }
    out["pbt_over_independent"] = {
        k: ratio(out["pbt"][k], out["independent"][k]) for k in out["pbt"]
    }
    return out


def mean(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.mean(xs) if xs else None


def fmt(x: float | None, spec: str = ".1f") -> str:
    return "-" if x is None else format(x, spec)


def plot(runs: dict, threshold: float, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for seed, pair in runs.items():
        for name in VARIANTS:
            ts, vs = zip(*pair[name]["curve"], strict=True)
            first = seed == next(iter(runs))
            label = name if first else None
            ax.step(ts, vs, where="post", color=COLOURS[name], alpha=0.75, label=label)
    ax.axhline(threshold, color="grey", ls="--", lw=1, label=f"threshold {threshold:.1f}")
    ax.set(title=title, xlabel="wall time since launch [s]", ylabel="population best objective")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 11, 21, 31])
    p.add_argument("--task", default="Cartpole")
    p.add_argument("--mutation", help="pbt/mutation file (default: <task>_mutation if present)")
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--threshold", type=float, help="default: 90%% of the best seen in any run")
    p.add_argument("--interval", type=int, default=4096, help="pbt.interval_steps of pbt")
    p.add_argument("--grid-points", type=int, default=200)
    p.add_argument("--limit-s", type=float, default=600, help="per run, then interrupted")
    args = p.parse_args()
    mutation = args.mutation or f"{args.task.lower()}_mutation"
    if not (ROOT / "cfg" / "pbt" / "mutation" / f"{mutation}.yaml").exists():
        mutation = "default_mutation"
    runs: dict = {}
    commands = {}
    for i, seed in enumerate(args.seeds):
        runs[seed] = {}
        for name in VARIANTS[:: 1 if i % 2 == 0 else -1]:
            cmd = command(args.task, mutation, name, seed, args.epochs, args.interval)
            commands.setdefault(name, ["python", *cmd, "train_dir=<tmp>/runs"])
            r = runs[seed][name] = run_once(cmd, args.limit_s)
            print(
                f"seed {seed} {name:>11}: final best {r['final_best']:.2f} (member "
                f"{r['final_best_member']}), {r['replace_events']} replaces, "
                f"{r['mutate_events']} mutations, {r['wall_s']:.1f} s"
                + (f", {len(r['odd_lines'])} odd line(s)" if r["odd_lines"] else ""),
                flush=True,
            )
    best_seen = max(v for pair in runs.values() for r in pair.values() for _, v in r["curve"])
    threshold = args.threshold if args.threshold is not None else 0.9 * best_seen
    per_seed = {seed: compare(pair, threshold, args.grid_points) for seed, pair in runs.items()}
    metrics = list(per_seed[args.seeds[0]]["pbt"])
    aggregate: dict = {
        name: {k: mean([s[name][k] for s in per_seed.values()]) for k in metrics}
        for name in VARIANTS
    }
    for name in VARIANTS:
        aggregate[name]["threshold_reached"] = sum(
            s[name]["time_to_threshold_s"] is not None for s in per_seed.values()
        )
    aggregate["pbt_over_independent"] = {
        k: ratio(aggregate["pbt"][k], aggregate["independent"][k]) for k in metrics
    }
    print(f"\nthreshold {threshold:.1f}; per seed (pbt / independent):")
    for seed, s in per_seed.items():
        a, b = s["pbt"], s["independent"]
        print(
            f"  seed {seed}: at {s['equal_time_s']:.1f} s best {a['best_at_equal_time']:.1f} / "
            f"{b['best_at_equal_time']:.1f}, grid mean {a['mean_best_over_grid']:.1f} / "
            f"{b['mean_best_over_grid']:.1f}, final {a['final_best']:.1f} / "
            f"{b['final_best']:.1f}, to threshold {fmt(a['time_to_threshold_s'])} / "
            f"{fmt(b['time_to_threshold_s'])} s"
        )
    print(f"mean over {len(args.seeds)} seeds:       pbt  independent  pbt/independent")
    verdict = []
    for k in metrics:
        a, b = aggregate["pbt"][k], aggregate["independent"][k]
        r = aggregate["pbt_over_independent"][k]
        print(f"  {k:<22} {fmt(a, '>9.2f')} {fmt(b, '>12.2f')} {fmt(r, '>16.3f')}")
        if r is not None and k != "wall_s":
            lower_wins = k == "time_to_threshold_s"
            won = "pbt" if (r < 1) == lower_wins else "independent"
            verdict.append(f"{k}: {'even (within 1%)' if abs(r - 1) < 0.01 else won}")
    reached = {name: aggregate[name]["threshold_reached"] for name in VARIANTS}
    print(f"  threshold reached in (of {len(args.seeds)} seeds): {reached}")
    print("better here (means): " + "; ".join(verdict))
    name = "pbt_population" + ("" if args.task == "Cartpole" else f"_{args.task.lower()}")
    write_result(
        name,
        {
            "settings": {**vars(args), "mutation": mutation, "threshold_used": threshold},
            "interval_steps": {"pbt": args.interval, "independent": NEVER},
            "commands": commands,
            "note": "curve rows: (s since launch, population best objective); the last from the "
            "closing summary. Means of time_to_threshold_s over the seeds that reached it.",
            "runs": {str(s): pair for s, pair in runs.items()},
            "per_seed": {str(s): v for s, v in per_seed.items()},
            "aggregate": aggregate,
            "better": verdict,
        },
    )
    title = f"{args.task}: PBT vs independent, population of 3, {args.epochs} epochs"
    plot(runs, threshold, RESULTS / f"{name}.png", title)


if __name__ == "__main__":
    main()
