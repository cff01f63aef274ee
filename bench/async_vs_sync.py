"""Async PPO (1 trainer + 2 actor GMIs) against sync PPO (3 GMIs) on Ant, on the same cores
with the same total envs and the same number of env steps: samples per second and reward over
wall time on one plot.

Sync: gmi.per_gpu=3, TOTAL/3 envs per GMI, every GMI simulates and trains in lockstep (its
throughput: env steps/s of all GMIs = samples trained/s). Async: gmi.per_gpu=3 with
gmi.mode=async, TOTAL/2 envs per actor; PPS (actions produced/s) and TTOP (samples trained/s)
from the trainer's last 10 s window. The ratio printed is async TTOP over sync samples/s.

    python bench/async_vs_sync.py [--total-envs 1536] [--frames 3000000]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, ROOT, compose, write_result

from isaacgymenvs_gmi.launch import plan_run, run


def one_run(mode: str, total_envs: int, frames: int) -> dict:
    gmis_with_envs = 2 if mode == "async" else 3
    envs = total_envs // gmis_with_envs
    per_epoch = 16 * envs * (1 if mode == "async" else 3)  # horizon 16
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(
            "task=Ant",
            "gmi.per_gpu=3",
            f"gmi.mode={mode}",
            f"num_envs={envs}",
            f"train.params.config.minibatch_size={envs * 8}",
            f"max_iterations={max(frames // per_epoch, 10)}",
            f"train_dir={d}",
            "train.params.config.save_frequency=0",
        )
        result = run(cfg, plan_run(cfg))
    hist = result.history
    out = {"mode": mode, "envs_per_gmi": envs, "curve": list(hist), "reward": result.mean_reward}
    if mode == "sync":
        (f0, t0, _), (f1, t1, _) = hist[2], hist[-1]
        out["samples_per_s"] = (f1 - f0) / (t1 - t0)
    else:
        out.update(result.rates)
        out["samples_per_s"] = result.rates["ttop"]
        out["transitions"] = {k: v for k, v in result.channels.items() if k != "lag"}
    return out


def plot(runs: dict[str, dict], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.8))
    for mode, r in runs.items():
        label = f"{mode} ({r['samples_per_s']:,.0f} samples/s)"
        ax.plot([t for _, t, _ in r["curve"]], [v for _, _, v in r["curve"]], label=label)
    ax.set(title="Ant, 3 GMIs on this CPU", xlabel="wall time [s]", ylabel="mean episode reward")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--total-envs", type=int, default=1536)
    p.add_argument("--frames", type=int, default=3_000_000)
    args = p.parse_args()
    runs = {mode: one_run(mode, args.total_envs, args.frames) for mode in ("sync", "async")}
    for mode, r in runs.items():
        print(f"{mode}: {r['samples_per_s']:,.0f} samples/s, final reward {r['reward']}")
    ratio = runs["async"]["samples_per_s"] / runs["sync"]["samples_per_s"]
    print(f"Ant, {args.total_envs} envs: async TTOP / sync samples/s = {ratio:.2f}")
    plot(runs, RESULTS / "async_vs_sync.png")
    write_result(
        "async_vs_sync",
        {
            "command": "python bench/async_vs_sync.py "
            f"--total-envs {args.total_envs} --frames {args.frames}",
            "ratio_async_over_sync_samples_per_s": ratio,
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
