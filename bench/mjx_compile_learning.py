"""Do 3 GMIs learn as well as one process on the GPU's code paths, run on the CPU?

On an H100, 3 MPS GMIs learned about a third as much per epoch as one process with the same
total envs and minibatch. The CPU runs that learned alike used MuJoCo's C engine with
torch.compile off; the GPU runs used MJX with torch.compile on. This runs the same equal-samples
comparison with both of the GPU's ingredients on the CPU: Ant on MJX, rl-games'
``torch_compile`` forced on, one process of 1,536 envs against 3 GMIs of 512 (minibatch 8 x envs
per GMI: both take the same two union minibatches of 12,288 per mini-epoch), per seed. If the
gap appears here it is not the GPU's.

Reports the mean episode reward (rl-games' meter, merged across GMIs) at every tenth epoch, the
wall time of each run and, per seed, the 3-GMI / 1-process ratio of the final reward. Writes
bench/results/mjx_compile_learning.json and .png after every run; a later call adds its runs to
those the file holds (same setup and epochs), so the comparison can be run in parts.

    python bench/mjx_compile_learning.py [--seeds 42,7] [--compile on,off] [--epochs 60]
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, ROOT, read_scalars, run_logged, write_result

NAME = "mjx_compile_learning"
TOTAL_ENVS = 1536
MARKS = (10, 20, 30, 40, 50, 60)
SETUP = (
    "Ant, sim_backend=mjx (CPU), equal samples: 1 x 1536 envs vs 3 x 512, "
    "minibatch 8 x envs per GMI, horizon 16"
)


def train_ant_mjx(
    gmis: int, envs: int, seed: int, compile_on: bool, epochs: int, runs: Path
) -> tuple[list, str, float, str]:
    """``train.py`` on Ant with MJX (``envs`` per GMI, minibatch 8 x that), logged beside
    ``runs``; returns its (time, line) rows, its TensorBoard folder, its wall time and its
    command as a user would type it (the run folder left out)."""
    cmd = [
        sys.executable,
        "train.py",
        "task=Ant",
        "sim_backend=mjx",
        f"gmi.per_gpu={gmis}",
        f"num_envs={envs}",
        f"train.params.config.minibatch_size={envs * 8}",
        f"+train.params.config.torch_compile={compile_on}",
        f"max_iterations={epochs}",
        f"seed={seed}",
        "train.params.config.save_frequency=0",
        f"train_dir={runs}",
    ]
    start = time.monotonic()
    rows, code, _ = run_logged(cmd, runs.with_suffix(".log"), limit_s=3 * 3600)
    wall = time.monotonic() - start
    if code != 0:
        tail = "\n".join(line for _, line in rows[-30:])
        raise RuntimeError(f"{' '.join(cmd)} exited with {code}:\n{tail}")
    (summaries,) = glob.glob(str(runs / "*" / "summaries"))
    return rows, summaries, wall, " ".join(["python", *cmd[1:-1], "train_dir=..."])


def one_run(gmis: int, seed: int, compile_on: bool, epochs: int, work: Path) -> dict:
    envs = TOTAL_ENVS // gmis
    runs = work / f"seed{seed}_gmis{gmis}_compile{int(compile_on)}"
    rows, summaries, wall, command = train_ant_mjx(gmis, envs, seed, compile_on, epochs, runs)
    curve = dict(read_scalars(summaries, "rewards/iter"))
    return {
        "seed": seed,
        "gmis": gmis,
        "envs_per_gmi": envs,
        "torch_compile": compile_on,
        "wall_s": wall,
        "reward_at": {str(e): curve.get(e) for e in MARKS if e <= epochs},
        "curve": sorted(curve.items()),
        "skipped_steps_seen": any("steps skipped" in line for _, line in rows),
        "command": command,
        "date": time.strftime("%Y-%m-%d %H:%M"),
    }


def _key(row: dict) -> tuple:
    return (row["torch_compile"], row["seed"], row["gmis"])


def _earlier_runs(epochs: int) -> list[dict]:
    """The rows the results file already holds for this setup and epoch count: each call adds
    or replaces the runs it makes, so the eight runs (about 2 h on 2 cores) may be split."""
    path = RESULTS / f"{NAME}.json"
    if not path.exists():
        return []
    earlier = json.loads(path.read_text())
    if earlier.get("setup") != SETUP or earlier.get("epochs") != epochs:
        return []
    return earlier["runs"]


def _verdicts(runs: list[dict]) -> list[dict]:
    """Per (torch.compile, seed) with both a 1-process and a 3-GMI run: the 3/1 ratios, and
    whether the 3 GMIs' final reward reaches the one-process spread over seeds (its lowest)."""
    by_key = {_key(r): r for r in runs}
    low = {}
    for (compile_on, _, gmis), r in by_key.items():
        if gmis == 1:
            final = r["reward_at"][str(max(int(e) for e in r["reward_at"]))]
            low[compile_on] = min(final, low.get(compile_on, final))
    out = []
    for compile_on, seed in sorted({(c, s) for c, s, _ in by_key}, reverse=True):
        one, three = by_key.get((compile_on, seed, 1)), by_key.get((compile_on, seed, 3))
        if one is None or three is None:
            continue
        last = str(max(int(e) for e in one["reward_at"]))
        ratio = three["reward_at"][last] / one["reward_at"][last]
        out.append(
            {
                "seed": seed,
                "torch_compile": compile_on,
                "final_epoch": int(last),
                "three_over_one_reward": ratio,
                "three_over_one_wall_time": three["wall_s"] / one["wall_s"],
                "one_process_low_over_seeds": low[compile_on],
                "within_one_process_spread": three["reward_at"][last] >= low[compile_on],
            }
        )
        print(
            f"compile {'on' if compile_on else 'off'} seed {seed}: 3 GMIs / 1 process, "
            f"reward at epoch {last} {ratio:.2f}, wall time "
            f"{three['wall_s'] / one['wall_s']:.2f}"
        )
    return out


def _write(runs: list[dict], epochs: int) -> None:
    runs = sorted(runs, key=_key, reverse=True)
    write_result(
        NAME,
        {
            "command": "python bench/mjx_compile_learning.py --seeds S --compile on|off "
            f"--epochs {epochs} (each call adds its runs; see runs[].command)",
            "setup": SETUP,
            "epochs": epochs,
            "verdicts": _verdicts(runs),
            "runs": runs,
        },
    )


def _plot(runs: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    seeds = sorted({r["seed"] for r in runs}, reverse=True)
    fig, axes = plt.subplots(1, len(seeds), figsize=(5 * len(seeds), 3.6), squeeze=False)
    for ax, seed in zip(axes[0], seeds, strict=True):
        for r in sorted((r for r in runs if r["seed"] == seed), key=_key, reverse=True):
            label = f"{r['gmis']} GMI{'s' if r['gmis'] > 1 else ''}, compile " + (
                "on" if r["torch_compile"] else "off"
            )
            style = "-" if r["torch_compile"] else "--"
            ax.plot([e for e, _ in r["curve"]], [v for _, v in r["curve"]], style, label=label)
        ax.set(title=f"Ant on MJX (CPU), seed {seed}", xlabel="epoch", ylabel="mean reward")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / f"{NAME}.png", dpi=110)
    print(f"wrote {(RESULTS / f'{NAME}.png').relative_to(ROOT)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="42,7")
    p.add_argument("--compile", default="on", help="on, off or on,off")
    p.add_argument("--epochs", type=int, default=60)
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    compiles = [c.strip() == "on" for c in args.compile.split(",")]
    runs = {_key(r): r for r in _earlier_runs(args.epochs)}
    with tempfile.TemporaryDirectory() as work:
        for compile_on in compiles:
            for seed in seeds:
                for gmis in (1, 3):
                    row = one_run(gmis, seed, compile_on, args.epochs, Path(work))
                    runs[_key(row)] = row
                    _write(list(runs.values()), args.epochs)  # a stopped call keeps its runs
                    marks = " / ".join(
                        "-" if v is None else f"{v:.1f}" for v in row["reward_at"].values()
                    )
                    print(
                        f"compile {'on' if compile_on else 'off'} seed {seed} {gmis} GMI(s): "
                        f"reward at epochs {'/'.join(row['reward_at'])}: {marks} "
                        f"({row['wall_s'] / 60:.1f} min)",
                        flush=True,
                    )
    _plot(list(runs.values()))


if __name__ == "__main__":
    main()
