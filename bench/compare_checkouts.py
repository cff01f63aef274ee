"""Does a change move PPO throughput? Two checkouts of this repo, alternated run by run.

For a refactoring that must not change behaviour or speed: each round runs, in each checkout
(order flipped every round, so slow phases of the machine hit both), the plugin's single-GMI
Ant PPO (``bench/ppo_overhead.py --one plugin``: rl-games' own clock, epochs 3 on) and a 3-GMI
Ant run (``train.py gmi.per_gpu=3``, median of GMI 0's per-epoch env steps/s from epoch 3).
Prints per-run figures and the ratio of medians, head / base. Each checkout needs its own
``.venv`` (``make install`` there), since an editable install points at one tree.
Writes bench/results/compare_checkouts.json.

    python bench/compare_checkouts.py --base /path/to/other/checkout [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from common import ROOT, write_result

PROGRESS = re.compile(r"\[GMI x3\] epoch (\d+)/\d+ frames [\d,]+ \| ([\d,]+) env steps/s")
THREE_GMIS = [
    "task=Ant",
    "gmi.per_gpu=3",
    "num_envs=512",
    "train.params.config.minibatch_size=4096",
    "max_iterations=20",
    "train.params.config.save_frequency=0",
]


def _python(tree: Path) -> str:
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{tree}: no .venv (run `make install` there first)")
    return str(python)


def _git_head(tree: Path) -> str:
    out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tree, capture_output=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=tree, capture_output=True)
    return out.stdout.decode().strip() + ("+changes" if dirty.stdout.strip() else "")


def one_gmi(tree: Path) -> float:
    with tempfile.TemporaryDirectory() as runs:
        out = subprocess.run(
            [_python(tree), "bench/ppo_overhead.py", "--one", "plugin", "--train-dir", runs],
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        )
    return json.loads(out.stdout.strip().splitlines()[-1])["steps_per_s"]


def three_gmis(tree: Path) -> float:
    with tempfile.TemporaryDirectory() as runs:
        out = subprocess.run(
            [_python(tree), "train.py", *THREE_GMIS, f"train_dir={runs}"],
            cwd=tree,
            capture_output=True,
            text=True,
            check=True,
        )
    rows = [(int(e), float(s.replace(",", ""))) for e, s in PROGRESS.findall(out.stdout)]
    return statistics.median(s for e, s in rows if e >= 3)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, type=Path, help="the checkout to compare against")
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    trees = {"base": args.base.resolve(), "head": ROOT}
    samples = {kind: {name: [] for name in trees} for kind in ("one_gmi", "three_gmis")}
    for rnd in range(args.rounds):
        for name in list(trees)[:: 1 if rnd % 2 == 0 else -1]:
            samples["one_gmi"][name].append(one_gmi(trees[name]))
            samples["three_gmis"][name].append(three_gmis(trees[name]))
            print(
                f"round {rnd} {name}: 1 GMI {samples['one_gmi'][name][-1]:,.0f}, "
                f"3 GMIs {samples['three_gmis'][name][-1]:,.0f} env steps/s",
                flush=True,
            )
    ratios = {}
    for kind, runs in samples.items():
        base, head = statistics.median(runs["base"]), statistics.median(runs["head"])
        ratios[kind] = head / base
        print(f"{kind}: median base {base:,.0f}, head {head:,.0f}, head / base {ratios[kind]:.3f}")
    write_result(
        "compare_checkouts",
        {
            "base": _git_head(trees["base"]),
            "head": _git_head(trees["head"]),
            "rounds": args.rounds,
            "samples_env_steps_per_s": samples,
            "head_over_base": ratios,
        },
    )


if __name__ == "__main__":
    main()
