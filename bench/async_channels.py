"""Multi-channel / uni-channel experience sharing (paper Table 8), async PPO on Ant with one
trainer and two actor GMIs (gmi.per_gpu=3). Target: >= 1.2x PPS and TTOP (the paper: 1.1-1.3).

``multi``: experience split by kind into channels, each transfer grown to a whole chunk;
``uni``: the same code with one channel carrying every kind, one step per transfer. PPS
(actions produced per second, both actors) and TTOP (samples trained on per second) come from
the trainer's last 10 s window, never from warm-up. Runs alternate between the modes; ratios are
of medians over the repeats.

    python bench/async_channels.py [--envs 512] [--epochs 40] [--repeats 3]
"""

from __future__ import annotations

import argparse
import tempfile

from common import compose, median, write_result

from isaacgymenvs_gmi.launch import plan_run, run


def one_run(channels: str, envs: int, epochs: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(
            "task=Ant",
            "gmi.per_gpu=3",
            "gmi.mode=async",
            f"gmi.channels={channels}",
            f"num_envs={envs}",
            f"train.params.config.minibatch_size={envs * 8}",
            f"max_iterations={epochs}",
            f"train_dir={d}",
            "train.params.config.save_frequency=0",
        )
        result = run(cfg, plan_run(cfg))
    return {"channels": channels, **result.rates, "transitions": result.channels}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=512, help="envs per actor GMI")
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    runs: dict[str, list[dict]] = {"multi": [], "uni": []}
    for _ in range(args.repeats):
        for mode in runs:
            runs[mode].append(one_run(mode, args.envs, args.epochs))
            r = runs[mode][-1]
            print(f"{mode}: PPS {r['pps']:,.0f} TTOP {r['ttop']:,.0f}", flush=True)
    ratios = {
        key: median([r[key] for r in runs["multi"]]) / median([r[key] for r in runs["uni"]])
        for key in ("pps", "ttop")
    }
    print(
        f"Ant async, 1 trainer + 2 actors x {args.envs} envs: multi / uni = "
        f"{ratios['pps']:.2f} PPS, {ratios['ttop']:.2f} TTOP (target >= 1.2)"
    )
    write_result(
        "async_channels",
        {
            "command": "python bench/async_channels.py "
            f"--envs {args.envs} --epochs {args.epochs} --repeats {args.repeats}",
            "target": "multi / uni >= 1.2 in PPS and TTOP",
            "ratios": ratios,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
