"""The channels alone (no physics, no SGD): multi-channel / uni-channel transfer throughput
(paper Table 8), two producer processes of Ant-shaped experience (60 obs, 8 actions, 512 envs,
chunks of 16 steps) into one consumer over shared-memory routes.

Producers push pre-made steps through their dispenser as fast as credits allow; the consumer
rebuilds whole chunks with its collector, checks them exactly once and releases the slots.
Throughput: transitions delivered per second from the first to the last chunk. This isolates
what the channel design changes (number and size of transfers, packing); the end-to-end
figure, with simulation and training, is ``bench/async_channels.py``.

With ``--device cuda`` (GMIs sharing a GPU) the steps are made on the GPU and the consumer needs
its chunks there, as actors and a trainer on one GPU do; each channel mode then runs over routes
whose data lives in device memory opened by CUDA IPC (``ipc``) and over host routes (``host``:
staged through host memory and copied back), and the ratios are multi / uni over IPC and IPC /
host staging per mode.

    python bench/channel_transfer.py [--envs 512] [--chunks 300] [--repeats 3] [--device cpu]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time

import torch
import torch.distributed as dist
from common import median, write_result

from isaacgymenvs_gmi.channels import (
    Collector,
    Dispenser,
    Ledger,
    Route,
    channel_specs,
    experience_kinds,
    route_shape,
)

OBS, ACTIONS, CHUNK, SLOTS, PRODUCERS = 60, 8, 16, 2, 2
KINDS = experience_kinds(OBS, 0, ACTIONS)


def shape_for(mode: str, envs: int, path: str = "host"):
    shape = route_shape(channel_specs(mode, KINDS), envs, CHUNK, SLOTS, compress=mode == "multi")
    return shape.data_apart() if path == "ipc" else shape


def steps(envs: int, device: str = "cpu") -> list[dict[str, torch.Tensor]]:
    out = []
    for t in range(CHUNK):
        step = {}
        for kind in KINDS:
            if kind.dtype == torch.bool:
                step[kind.name] = torch.rand(envs) < 0.01
            elif kind.dtype == torch.int64:
                step[kind.name] = torch.full((envs,), t, dtype=torch.int64)
            else:
                step[kind.name] = torch.randn(envs, *kind.shape)
        out.append({k: v.to(device) for k, v in step.items()})
    return out


def producer(
    actor: int, mode: str, envs: int, chunks: int, store_path: str, device: str, path: str
) -> None:
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, PRODUCERS + 1)
    where = device if path == "ipc" else "cpu"
    route = Route.attach(shape_for(mode, envs, path), store, f"route/{actor}", where)
    dispenser = Dispenser(actor, [route], deadline_s=float("inf"), abort=lambda: False)
    made = steps(envs, device)
    for _ in range(chunks):
        for step in made:
            dispenser.push(step)


def one_run(mode: str, envs: int, chunks: int, device: str = "cpu", path: str = "host") -> float:
    with tempfile.TemporaryDirectory() as d:
        store_path = os.path.join(d, "store")
        store = dist.FileStore(store_path, PRODUCERS + 1)
        shape = shape_for(mode, envs, path)
        routes, paths = [], []
        for actor in range(PRODUCERS):
            where = device if path == "ipc" else "cpu"
            route, names = Route.create(shape, store, f"route/{actor}", where)
            routes.append(route)
            paths.extend(names)
        ctx = mp.get_context("spawn")
        procs = [
            ctx.Process(target=producer, args=(a, mode, envs, chunks, store_path, device, path))
            for a in range(PRODUCERS)
        ]
        for p in procs:
            p.start()
        collector = Collector(list(range(PRODUCERS)), routes, KINDS)
        ledger, taken, first = Ledger(), 0, None
        try:
            while taken < PRODUCERS * chunks:
                got = collector.poll()
                for chunk in got:
                    ledger.accept(chunk.actor, chunk.route_seq, chunk.transitions)
                    chunk.data = {k: v.to(device) for k, v in chunk.data.items()}  # as trainers
                if got:
                    first = first or time.perf_counter()
                    taken += len(got)
                else:
                    time.sleep(0.0002)
            if device != "cpu":
                torch.cuda.synchronize()
            elapsed = time.perf_counter() - first
        finally:
            for p in procs:
                p.join(60)
            for path in paths:
                os.unlink(path)
    # the first chunk's transitions arrived at `first`: count the rest over the span
    return (ledger.consumed - envs * CHUNK) / elapsed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--envs", type=int, default=512)
    p.add_argument("--chunks", type=int, default=300, help="per producer")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    args = p.parse_args()
    paths = ("ipc", "host") if args.device == "cuda" else ("host",)
    runs: dict[str, list[float]] = {f"{m}/{path}": [] for path in paths for m in ("multi", "uni")}
    for _ in range(args.repeats):
        for key, got in runs.items():
            mode, path = key.split("/")
            got.append(one_run(mode, args.envs, args.chunks, args.device, path))
            print(f"{key}: {got[-1]:,.0f} transitions/s", flush=True)
    med = {key: median(v) for key, v in runs.items()}
    ratios = {"multi_over_uni": med[f"multi/{paths[0]}"] / med[f"uni/{paths[0]}"]}
    if args.device == "cuda":
        for mode in ("multi", "uni"):
            ratios[f"ipc_over_host_{mode}"] = med[f"{mode}/ipc"] / med[f"{mode}/host"]
    shown = ", ".join(f"{k} {v:.2f}" for k, v in ratios.items())
    print(f"channels alone, {PRODUCERS} producers x {args.envs} envs on {args.device}: {shown}")
    suffix = "" if args.device == "cpu" else f"_{args.device}"
    write_result(
        f"channel_transfer{suffix}",
        {
            "command": "python bench/channel_transfer.py --envs "
            f"{args.envs} --chunks {args.chunks} --repeats {args.repeats} --device {args.device}",
            "shape": {"obs": OBS, "actions": ACTIONS, "chunk_steps": CHUNK, "ring_slots": SLOTS},
            "ratio_multi_over_uni": ratios["multi_over_uni"],
            "ratios": ratios,
            "transitions_per_s": runs,
        },
    )


if __name__ == "__main__":
    main()
