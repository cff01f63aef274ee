"""Policy lag in async PPO on Ant (1 trainer + 2 actor GMIs), and what ``gmi.async.max_lag``
costs: for each limit, the lag of every chunk trained on, the share of transitions dropped as
too old, training samples/s and reward over wall time (the ratio printed is each limit's TTOP
over the TTOP without a limit, same run).

    python bench/async_lag.py [--limits 1 2 4 8 1000] [--epochs 80] [--envs 512]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, ROOT, write_result

from isaacgymenvs_gmi.launch import plan_run, run


def one_run(max_lag: int, envs: int, epochs: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        cfg = compose_async(d, envs, epochs, f"gmi.async.max_lag={max_lag}")
        result = run(cfg, plan_run(cfg))
    c = result.channels
    lags = {int(k): v for k, v in c["lag"].items()}
    return {
        "max_lag": max_lag,
        **result.rates,
        "dropped_share": c["dropped"] / max(c["produced"], 1),
        "lag_histogram": lags,
        "lag_mean": sum(k * v for k, v in lags.items()) / max(sum(lags.values()), 1),
        "final_reward": result.mean_reward,
        "curve": list(result.history),
        "transitions": {k: v for k, v in c.items() if k != "lag"},
    }


def compose_async(train_dir: str, envs: int, epochs: int, *more: str):
    from common import compose

    return compose(
        "task=Ant",
        "gmi.per_gpu=3",
        "gmi.mode=async",
        f"num_envs={envs}",
        f"train.params.config.minibatch_size={envs * 8}",
        f"max_iterations={epochs}",
        f"train_dir={train_dir}",
        "train.params.config.save_frequency=0",
        *more,
    )


def plot(runs: list[dict], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    for r in runs:
        label = "no limit" if r["max_lag"] >= 1000 else f"max_lag={r['max_lag']}"
        left.plot([t for _, t, _ in r["curve"]], [v for _, _, v in r["curve"]], label=label)
        lags = sorted(r["lag_histogram"])
        total = sum(r["lag_histogram"].values())
        right.plot(lags, [r["lag_histogram"][k] / total for k in lags], marker="o", label=label)
    left.set(title="Ant async: reward over wall time", xlabel="wall time [s]", ylabel="reward")
    right.set(title="lag of chunks trained on", xlabel="policy versions", ylabel="share")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path.relative_to(ROOT)}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limits", type=int, nargs="+", default=[1, 2, 4, 8, 1000])
    p.add_argument("--epochs", type=int, default=80)
    p.add_argument("--envs", type=int, default=512)
    args = p.parse_args()
    runs = []
    for limit in args.limits:
        runs.append(one_run(limit, args.envs, args.epochs))
        r = runs[-1]
        print(
            f"max_lag={limit}: TTOP {r['ttop']:,.0f} PPS {r['pps']:,.0f} lag mean "
            f"{r['lag_mean']:.2f} max {max(r['lag_histogram'])} dropped {r['dropped_share']:.1%} "
            f"reward {r['final_reward']}",
            flush=True,
        )
    free = next(r for r in runs if r["max_lag"] == max(args.limits))
    for r in runs:
        r["ttop_over_no_limit"] = r["ttop"] / free["ttop"]
        ratio = r["ttop_over_no_limit"]
        print(f"max_lag={r['max_lag']}: TTOP / TTOP without a limit = {ratio:.2f}")
    plot(runs, RESULTS / "async_lag.png")
    write_result(
        "async_lag",
        {
            "command": "python bench/async_lag.py --limits "
            f"{' '.join(map(str, args.limits))} --epochs {args.epochs} --envs {args.envs}",
            "runs": runs,
        },
    )


if __name__ == "__main__":
    main()
