"""Reduction among the GMIs of one GPU: CUDA IPC device buffers vs host-staged shared memory.

Part 1, latency: k GMIs (real processes, under an MPS daemon) share GPU 0 and all-reduce a
gradient that lives on the GPU, for the Ant policy (57,361 values) and a ShadowHand-size one
(1.5 M), through (a) the host-staged path the paper uses (device -> pinned host -> shared-memory
segment -> device) and (b) one device buffer the GMIs share through CUDA IPC. Both run
interleaved in a rotating order; a round's time is the slowest GMI's; medians over rounds.
Target: host-staged / IPC >= 5.

Part 2, end to end: Ant PPO with 3 MPS GMIs on the GPU (MJX physics), ``gmi.intra_device=shm``
then ``ipc``, alternated; env steps/s per run is the median of TensorBoard's
``gmi/env_steps_per_s_total`` after the first epochs.

Needs a CUDA GPU; elsewhere it says so and writes nothing.

    python bench/intra_gpu_reduction.py [--rounds 50] [--epochs 40] [--repeats 2]
"""

from __future__ import annotations

import argparse
import glob
import os
import queue
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

from common import RESULTS, read_scalars, write_result

SIZES = {"ant_57k": 57_361, "shadowhand_1.5M": 1_500_000}
ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _gmi(rank: int, k: int, port: int, rounds: int, out) -> None:
    import torch
    import torch.distributed as dist

    from isaacgymenvs_gmi.comm.cuda_ipc import CudaIpcCollectives
    from isaacgymenvs_gmi.comm.routing import RoutedCollectives
    from isaacgymenvs_gmi.comm.shared_memory import SharedMemoryCollectives

    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    store = dist.TCPStore("127.0.0.1", port, k, is_master=rank == 0, timeout=timedelta(seconds=120))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=k)
    members = tuple(range(k))
    transports = {
        "host-staged shm": RoutedCollectives(
            SharedMemoryCollectives(rank, members, store, "bench/shm", timeout_s=120), {}
        ),
        "cuda ipc": RoutedCollectives(
            CudaIpcCollectives(rank, members, store, "bench/ipc", device, timeout_s=120), {}
        ),
    }
    names = list(transports)
    results = {}
    generator = torch.Generator(device=device).manual_seed(0)  # the same tensor in every GMI
    for size, n in SIZES.items():
        source = torch.randn(n, device=device, generator=generator)
        flat = torch.empty_like(source)
        times = {name: [] for name in names}
        for rnd in range(rounds + 2):  # two warm-up rounds
            for name in names[rnd % 2 :] + names[: rnd % 2]:
                flat.copy_(source)
                torch.cuda.synchronize(device)
                dist.barrier()
                t0 = time.perf_counter()
                transports[name].all_reduce(flat, members)
                torch.cuda.synchronize(device)
                if rnd >= 2:
                    times[name].append(time.perf_counter() - t0)
        expected = source * k  # every GMI reduced the same tensor
        assert torch.allclose(flat, expected, rtol=1e-5), "wrong all-reduce result"
        slowest = torch.tensor([times[name] for name in names], dtype=torch.float64)
        dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
        results[size] = {n: statistics.median(slowest[i].tolist()) for i, n in enumerate(names)}
    if rank == 0:
        out.put(results)
    dist.barrier()
    dist.destroy_process_group()


def latency(k: int, rounds: int) -> dict:
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    procs = mp.start_processes(
        _gmi, args=(k, _free_port(), rounds, out), nprocs=k, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            got = out.get(timeout=2)
        except queue.Empty:
            if procs.join(timeout=0):  # raises with the GMI's traceback if one failed
                raise RuntimeError("the GMIs ended without a result") from None
            continue
        procs.join(timeout=120)
        return got
    raise TimeoutError("no latency result within 600 s")


def end_to_end(intra: str, epochs: int) -> float:
    """Median total env steps/s of a 3-GMI Ant run after its first 5 epochs."""
    with tempfile.TemporaryDirectory() as runs:
        proc = subprocess.run(
            [
                sys.executable,
                "train.py",
                "task=Ant",
                "gmi.per_gpu=3",
                "gmi.backend=mps",
                f"gmi.intra_device={intra}",
                "sim_backend=mjx",
                f"max_iterations={epochs}",
                "train.params.config.save_frequency=0",
                f"train_dir={runs}",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        assert f"inside a device: {intra}," in proc.stdout, proc.stdout[-2000:]
        (summaries,) = glob.glob(os.path.join(runs, "*", "summaries"))
        rates = [v for _, v in read_scalars(summaries, "gmi/env_steps_per_s_total")]
    return statistics.median(rates[5:])


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=50)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("intra_gpu_reduction: needs a CUDA GPU; nothing measured")
        return
    from isaacgymenvs_gmi.gmi.mps import mps_daemon

    rows = []
    with mps_daemon():
        for k in (2, 3):
            for size, t in latency(k, args.rounds).items():
                ratio = t["host-staged shm"] / t["cuda ipc"]
                rows.append({"gmis": k, "size": size, "seconds": t, "host_staged_over_ipc": ratio})
                print(
                    f"{k} GMIs {size:>16}: host-staged {t['host-staged shm'] * 1e3:8.3f} ms, "
                    f"ipc {t['cuda ipc'] * 1e3:8.3f} ms, ratio {ratio:5.2f} (target >= 5)"
                )
    result = {
        "device": torch.cuda.get_device_name(0),
        "rounds": args.rounds,
        "latency": rows,
        "worst_host_staged_over_ipc": min(r["host_staged_over_ipc"] for r in rows),
        "target": 5.0,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    write_result("intra_gpu_reduction", result)  # part 1 stays if part 2 is cut short
    e2e = {"shm": [], "ipc": []}
    for _ in range(args.repeats):
        for intra in ("shm", "ipc"):
            e2e[intra].append(end_to_end(intra, args.epochs))
    speedup = statistics.median(e2e["ipc"]) / statistics.median(e2e["shm"])
    print(f"Ant PPO, 3 MPS GMIs: env steps/s ipc / host-staged = {speedup:.3f} ({e2e})")
    result.update(ant_ppo_env_steps_per_s=e2e, ant_ppo_ipc_over_host_staged=speedup)
    write_result("intra_gpu_reduction", result)


if __name__ == "__main__":
    main()
