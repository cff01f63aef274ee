"""Gradient reduction latency per strategy, at each layout, against one flat gloo all-reduce.

For layouts (devices x GMIs per device) 1x2, 1x3, 2x2, 2x3, 3x2 on virtual CPU devices, each a
world of real processes, and two gradient sizes (the Ant policy's 57,361 parameters and a
ShadowHand-size 1.5 M), it times: one flat gloo all-reduce over all GMIs (the baseline), every
valid strategy over the transports the runtime uses (shared memory inside a device, gloo
across), and ``auto``. Variants run interleaved, in a rotating order, and a
round's time is the slowest GMI's; medians over rounds. ``auto`` is the runtime's tuned choice
(it measures the valid strategies on its first gradient of a size, here during the warm-up
rounds); Algorithm 1's pick is reported beside it. Target: ``auto`` <= 1.0x flat at every layout
and size.

Table 2's cost model is printed beside the measurements, with its two bandwidths calibrated in
the same world: b1 from an all-reduce inside one device, b2 from one across devices.

    python bench/reduction_latency.py [--rounds 40]
"""

from __future__ import annotations

import argparse
import socket
import statistics
import time
from datetime import timedelta

from common import RESULTS, write_result

LAYOUTS = [(1, 2), (1, 3), (2, 2), (2, 3), (3, 2)]
SIZES = {"ant_57k": 57_361, "shadowhand_1.5M": 1_500_000}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gmi(rank: int, g: int, t: int, port: int, rounds: int, out) -> None:
    import torch
    import torch.distributed as dist

    from isaacgymenvs_gmi.comm.reducers import make_reducer, mrr_valid, select_strategy
    from isaacgymenvs_gmi.comm.routing import build_collectives
    from isaacgymenvs_gmi.placement.layout import GmiLayout

    torch.set_num_threads(1)
    layout = GmiLayout(1, g, t)
    world = layout.world_size
    store = dist.TCPStore(
        "127.0.0.1", port, world, is_master=rank == 0, timeout=timedelta(seconds=120)
    )
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    comm, _ = build_collectives(rank, layout, "shm", store, timeout_s=120)
    mpl = layout.mpl()
    strategies = ["mpr", "har"] + (["mrr"] if mrr_valid(mpl) else [])
    reducers = {s: make_reducer(s, layout, comm) for s in (*strategies, "auto")}
    place = layout.place(rank)
    device = tuple(mpl[place.device])
    slot = tuple(row[place.slot] for row in mpl)

    def variants(flat):  # auto tunes itself during the warm-up rounds, as in a training run
        ops = {"flat gloo": lambda: dist.all_reduce(flat)}
        ops.update({s: (lambda r=r: r.sum(flat)) for s, r in reducers.items()})
        if t > 1:  # calibration of b1: one all-reduce inside a device
            ops["calib intra-device"] = lambda: comm.all_reduce(flat, device)
        if g > 1:  # calibration of b2: one all-reduce across devices
            ops["calib across devices"] = lambda: comm.all_reduce(flat, slot)
        return ops

    results = {}
    for name, n in SIZES.items():
        source, flat = torch.randn(n), torch.empty(n)
        ops = variants(flat)
        names = list(ops)
        times = {k: [] for k in names}
        for rnd in range(rounds + 2):  # two warm-up rounds
            order = names[rnd % len(names) :] + names[: rnd % len(names)]
            for k in order:
                flat.copy_(source)  # sums of sums would overflow within a few rounds
                dist.barrier()
                t0 = time.perf_counter()
                ops[k]()
                dt = time.perf_counter() - t0
                if rnd >= 2:
                    times[k].append(dt)
        mine = torch.tensor([times[k] for k in names], dtype=torch.float64)
        slowest = mine.clone()
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)  # a round lasts until the last GMI is done
        results[name] = {k: statistics.median(slowest[i].tolist()) for i, k in enumerate(names)}
        results[name]["auto picked"] = reducers["auto"].choice[n]
    if rank == 0:
        out.put({"algorithm1": select_strategy(mpl), "mpl": mpl, "times": results})
    dist.barrier()
    dist.destroy_process_group()


def measure(g: int, t: int, rounds: int) -> dict:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = mp.start_processes(
        _gmi, args=(g, t, _free_port(), rounds, out), nprocs=g * t, join=False, start_method="spawn"
    )
    got = out.get(timeout=1800)
    procs.join(timeout=120)
    return got


def model_times(g: int, t: int, n: int, times: dict, strategies: list[str]) -> dict:
    """Table 2 with b1, b2 calibrated from this world's own single-group all-reduces."""
    from isaacgymenvs_gmi.comm.cost_model import reduction_time

    m = 4.0 * n
    b1 = 2 * (t - 1) * m / (t * times["calib intra-device"]) if t > 1 else None
    b2 = 2 * (g - 1) * m / (g * times["calib across devices"]) if g > 1 else None
    big = 1e30  # a bandwidth that is never used by that layout
    out = {"b1_GBps": b1 and b1 / 1e9, "b2_GBps": b2 and b2 / 1e9}
    for s in strategies:
        out[s] = reduction_time(s, g, t, m, b1 or big, b2 or big)
    return out


def plot(rows: list[dict], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SIZES), figsize=(12, 4), sharey=True)
    for ax, size in zip(axes, SIZES, strict=True):
        mine = [r for r in rows if r["size"] == size]
        labels = [f"{r['g']}x{r['t']}" for r in mine]
        keys = ["mpr", "mrr", "har", "auto"]
        width = 0.2
        for i, k in enumerate(keys):
            xs = [j + (i - 1.5) * width for j in range(len(mine))]
            ys = [r["ratio_vs_flat"].get(k, float("nan")) for r in mine]
            ax.bar(xs, ys, width, label=k)
        ax.axhline(1.0, color="k", lw=0.8, ls="--")
        ax.set_xticks(range(len(mine)), labels)
        ax.set_title(f"{size} parameters")
        ax.set_xlabel("devices x GMIs per device")
    axes[0].set_ylabel("time / flat gloo all-reduce")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=40)
    args = parser.parse_args()
    rows = []
    print(f"{'layout':>6} {'size':>16} {'variant':>21} {'measured ms':>12} {'model ms':>9} ratio")
    for g, t in LAYOUTS:
        got = measure(g, t, args.rounds)
        for size, times in got["times"].items():
            strategies = [s for s in ("mpr", "mrr", "har") if s in times]
            model = model_times(g, t, SIZES[size], times, strategies)
            flat = times["flat gloo"]
            picked = times.pop("auto picked")
            ratio = {k: times[k] / flat for k in (*strategies, "auto")}
            ratio["algorithm1"] = times[got["algorithm1"]] / flat
            rows.append(
                {
                    "g": g,
                    "t": t,
                    "size": size,
                    "params": SIZES[size],
                    "auto_strategy": picked,
                    "algorithm1_strategy": got["algorithm1"],
                    "seconds": times,
                    "ratio_vs_flat": ratio,
                    "cost_model_seconds": model,
                }
            )
            for k in ("flat gloo", *strategies, "auto"):
                predicted = model.get(k if k != "auto" else picked)
                pm = f"{predicted * 1e3:9.3f}" if predicted is not None else " " * 9
                label = {"auto": f"auto={picked}", got["algorithm1"]: f"{k} (Alg. 1)"}.get(k, k)
                print(
                    f"{g}x{t:<4} {size:>16} {label:>21} "
                    f"{times[k] * 1e3:12.3f} {pm} {times[k] / flat:5.2f}"
                )
    worst = max(r["ratio_vs_flat"]["auto"] for r in rows)
    print(f"auto / flat, worst over layouts and sizes: {worst:.2f} (target <= 1.0)")
    RESULTS.mkdir(parents=True, exist_ok=True)
    plot(rows, RESULTS / "reduction_latency.png")
    write_result(
        "reduction_latency",
        {"rounds": args.rounds, "rows": rows, "worst_auto_vs_flat": worst, "target": 1.0},
    )


if __name__ == "__main__":
    main()
