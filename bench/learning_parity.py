"""Does Ant learn as well on 3 GMIs as on 1, at equal total samples? Over several seeds.

Each seed trains Ant twice with 768 envs in total: one GMI of 768 envs, and three GMIs of 256
(minibatch 4 x envs per GMI, so both take the same 4 union minibatches of 3,072 per mini-epoch),
60 epochs = 737,280 samples each. Two scores per run:

- ``meter``: rl-games' mean episode reward at epoch 60 (the last ``games_to_track`` episodes,
  merged across GMIs). Within 60 x 16 steps no episode reaches the 1,000-step limit, so these
  are the episodes that fell: a noisy, selective score.
- ``play``: the final checkpoint played deterministically on 256 fresh envs until each has
  finished an episode; mean return (and length) over those 256 full episodes.

Prints per-seed scores and, per score, mean +- std over seeds and the ratio of means (3 / 1
GMIs). Writes bench/results/learning_parity.json.

    python bench/learning_parity.py [--seeds 42,7,1,2,3] [--epochs 60]
"""

from __future__ import annotations

import argparse
import glob
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, read_scalars, write_result

TOTAL_ENVS = 768
PLAY_ENVS = 256
# the play run's closing line (ours; rl-games' own wording changed between its versions)
PLAYED = re.compile(r"mean episode reward: ([-\d.e+]+), mean episode length: ([-\d.e+]+)")


def _train_py(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "train.py", *args], cwd=ROOT, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise RuntimeError(" ".join(args) + "\n" + proc.stderr[-3000:])
    return proc.stdout


def run_once(gmis: int, seed: int, epochs: int, work: Path) -> dict:
    envs = TOTAL_ENVS // gmis
    runs = work / f"seed{seed}_gmis{gmis}"
    _train_py(
        "task=Ant",
        f"gmi.per_gpu={gmis}",
        f"num_envs={envs}",
        f"train.params.config.minibatch_size={envs * 4}",
        f"max_iterations={epochs}",
        f"seed={seed}",
        "train.params.config.save_frequency=0",
        f"train_dir={runs}",
    )
    (summaries,) = glob.glob(str(runs / "*" / "summaries"))
    meter = dict(read_scalars(summaries, "rewards/iter"))[epochs]
    (checkpoint,) = glob.glob(str(runs / "*" / "nn" / "last_*.pth"))
    played = PLAYED.findall(
        _train_py(
            "task=Ant",
            "test=True",
            f"checkpoint={checkpoint}",
            f"num_envs={PLAY_ENVS}",
            f"train.params.config.minibatch_size={PLAY_ENVS * 4}",
            f"+train.params.config.player={{games_num:{PLAY_ENVS},deterministic:True}}",
            f"train_dir={work / 'play'}",
        )
    )
    reward, length = (float(x) for x in played[-1])
    return {"meter": meter, "play": reward, "play_length": length}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="42,7,1,2,3")
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for seed in seeds:
            for gmis in (1, 3):  # alternated, so slow phases of the machine hit both
                row = {"seed": seed, "gmis": gmis, **run_once(gmis, seed, args.epochs, Path(work))}
                rows.append(row)
                print(
                    f"seed {seed:>3} {gmis} GMI(s): meter {row['meter']:7.1f}  "
                    f"play {row['play']:7.1f} over {row['play_length']:5.0f} steps",
                    flush=True,
                )
    summary = {}
    for score in ("meter", "play", "play_length"):
        per = {g: [r[score] for r in rows if r["gmis"] == g] for g in (1, 3)}
        stats = {
            g: (statistics.mean(v), statistics.stdev(v) if len(v) > 1 else 0.0)
            for g, v in per.items()
        }
        ratio = stats[3][0] / stats[1][0]
        summary[score] = {
            "one_gmi_mean": stats[1][0],
            "one_gmi_std": stats[1][1],
            "three_gmis_mean": stats[3][0],
            "three_gmis_std": stats[3][1],
            "three_over_one": ratio,
        }
        print(
            f"{score:>11}: 1 GMI {stats[1][0]:7.1f} +- {stats[1][1]:5.1f}, "
            f"3 GMIs {stats[3][0]:7.1f} +- {stats[3][1]:5.1f}, ratio of means {ratio:.2f}"
        )
    write_result(
        "learning_parity",
        {
            "total_envs": TOTAL_ENVS,
            "epochs": args.epochs,
            "samples_per_run": TOTAL_ENVS * 16 * args.epochs,
            "rows": rows,
            "summary": summary,
        },
    )


if __name__ == "__main__":
    main()
