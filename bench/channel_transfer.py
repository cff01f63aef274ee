"""The channels alone (no physics, no SGD): multi-channel / uni-channel transfer throughput
(paper Table 8), two producer processes of Ant-shaped experience (60 obs, 8 actions, 512 envs,
chunks of 16 steps) into one consumer over shared-memory routes.

Producers push pre-made steps through their dispenser as fast as credits allow; the consumer
rebuilds whole chunks with its collector, checks them exactly once and releases the slots.
Throughput: transitions delivered per second from the first to the last chunk. This isolates
what the channel design changes (number and size of transfers, packing); the end-to-end
figure, with simulation and training, is ``bench/async_channels.py``.

    python bench/channel_transfer.py [--envs 512] [--chunks 300] [--repeats 3]
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


def shape_for(mode: str, envs: int):
    return route_shape(channel_specs(mode, KINDS), envs, CHUNK, SLOTS, compress=mode == "multi")


def steps(envs: int) -> list[dict[str, torch.Tensor]]:
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
        out.append(step)
    return out


def producer(actor: int, mode: str, envs: int, chunks: int, store_path: str) -> None:
    torch.set_num_threads(1)
    store = dist.FileStore(store_path, PRODUCERS + 1)
    route = Route.attach(shape_for(mode, envs), store, f"route/{actor}")
    dispenser = Dispenser(actor, [route], deadline_s=float("inf"), abort=lambda: False)
    made = steps(envs)
    for _ in range(chunks):
        for step in made:
            dispenser.push(step)


def one_run(mode: str, envs: int, chunks: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        store_path = os.path.join(d, "store")
        store = dist.FileStore(store_path, PRODUCERS + 1)
        shape = shape_for(mode, envs)
        routes, paths = [], []
        for actor in range(PRODUCERS):
            route, path = Route.create(shape, store, f"route/{actor}")
            routes.append(route)
            paths.append(path)
        ctx = mp.get_context("spawn")
        procs = [
            ctx.Process(target=producer, args=(a, mode, envs, chunks, store_path))
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
                if got:
                    first = first or time.perf_counter()
                    taken += len(got)
                else:
                    time.sleep(0.0002)
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
    args = p.parse_args()
    runs: dict[str, list[float]] = {"multi": [], "uni": []}
    for _ in range(args.repeats):
        for mode in runs:
            runs[mode].append(one_run(mode, args.envs, args.chunks))
            print(f"{mode}: {runs[mode][-1]:,.0f} transitions/s", flush=True)
    ratio = median(runs["multi"]) / median(runs["uni"])
    print(f"channels alone, {PRODUCERS} producers x {args.envs} envs: multi / uni = {ratio:.2f}")
    write_result(
        "channel_transfer",
        {
            "command": "python bench/channel_transfer.py "
            f"--envs {args.envs} --chunks {args.chunks} --repeats {args.repeats}",
            "shape": {"obs": OBS, "actions": ACTIONS, "chunk_steps": CHUNK, "ring_slots": SLOTS},
            "ratio_multi_over_uni": ratio,
            "transitions_per_s": runs,
        },
    )


if __name__ == "__main__":
    main()
