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
bench/results/mjx_compile_learning.json and .png.

    python bench/mjx_compile_learning.py [--seeds 42,7] [--compile on,off] [--epochs 60]
"""

from __future__ import annotations

import argparse
import glob
import sys
import tempfile
import time
from pathlib import Path

from common import RESULTS, ROOT, read_scalars, run_logged, write_result

TOTAL_ENVS = 1536
MARKS = (10, 20, 30, 40, 50, 60)


def one_run(gmis: int, seed: int, compile_on: bool, epochs: int, work: Path) -> dict:
    envs = TOTAL_ENVS // gmis
    runs = work / f"seed{seed}_gmis{gmis}_compile{int(compile_on)}"
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
    rows, code, _ = run_logged(cmd, work / f"{runs.name}.log", limit_s=3 * 3600)
    wall = time.monotonic() - start
    if code != 0:
        tail = "\n".join(line for _, line in rows[-30:])
        raise RuntimeError(f"{' '.join(cmd)} exited with {code}:\n{tail}")
    (summaries,) = glob.glob(str(runs / "*" / "summaries"))
    curve = dict(read_scalars(summaries, "rewards/iter"))
    return {
        "seed": seed,
        "gmis": gmis,
        "envs_per_gmi": envs,
        "torch_compile": compile_on,
        "wall_s": wall,
        "reward_at": {e: curve.get(e) for e in MARKS if e <= epochs},
        "curve": sorted(curve.items()),
        "skipped_steps_seen": any("steps skipped" in line for _, line in rows),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="42,7")
    p.add_argument("--compile", default="on", help="on, off or on,off")
    p.add_argument("--epochs", type=int, default=60)
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    compiles = [c.strip() == "on" for c in args.compile.split(",")]
    runs = []
    with tempfile.TemporaryDirectory() as work:
        for compile_on in compiles:
            for seed in seeds:
                for gmis in (1, 3):
                    row = one_run(gmis, seed, compile_on, args.epochs, Path(work))
                    runs.append(row)
                    marks = " / ".join(
                        "-" if v is None else f"{v:.1f}" for v in row["reward_at"].values()
                    )
                    print(
                        f"compile {'on' if compile_on else 'off'} seed {seed} {gmis} GMI(s): "
                        f"reward at epochs {'/'.join(map(str, row['reward_at']))}: {marks} "
                        f"({row['wall_s'] / 60:.1f} min)",
                        flush=True,
                    )
    verdicts = []
    for compile_on in compiles:
        for seed in seeds:
            one, three = (
                next(
                    r
                    for r in runs
                    if r["seed"] == seed and r["gmis"] == g and r["torch_compile"] == compile_on
                )
                for g in (1, 3)
            )
            last = max(one["reward_at"])
            ratio = three["reward_at"][last] / one["reward_at"][last]
            verdicts.append(
                {
                    "seed": seed,
                    "torch_compile": compile_on,
                    "final_epoch": last,
                    "three_over_one_reward": ratio,
                    "three_over_one_wall_time": three["wall_s"] / one["wall_s"],
                }
            )
            print(
                f"compile {'on' if compile_on else 'off'} seed {seed}: 3 GMIs / 1 process, "
                f"reward at epoch {last} {ratio:.2f}, wall time "
                f"{three['wall_s'] / one['wall_s']:.2f}"
            )
    write_result(
        "mjx_compile_learning",
        {
            "command": f"python bench/mjx_compile_learning.py --seeds {args.seeds} "
            f"--compile {args.compile} --epochs {args.epochs}",
            "setup": "Ant, sim_backend=mjx (CPU), equal samples: 1 x 1536 envs vs 3 x 512, "
            "minibatch 8 x envs per GMI, horizon 16",
            "verdicts": verdicts,
            "runs": runs,
        },
    )
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(seeds), figsize=(5 * len(seeds), 3.6), squeeze=False)
    for ax, seed in zip(axes[0], seeds, strict=True):
        for r in (r for r in runs if r["seed"] == seed):
            label = f"{r['gmis']} GMI{'s' if r['gmis'] > 1 else ''}, compile " + (
                "on" if r["torch_compile"] else "off"
            )
            ax.plot([e for e, _ in r["curve"]], [v for _, v in r["curve"]], label=label)
        ax.set(title=f"Ant on MJX (CPU), seed {seed}", xlabel="epoch", ylabel="mean reward")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(RESULTS / "mjx_compile_learning.png", dpi=110)
    print(f"wrote {(RESULTS / 'mjx_compile_learning.png').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
