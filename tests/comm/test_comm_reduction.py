"""Every strategy gives the gradient of the union batch, with the in-process twin and with real
gloo processes, at layouts (GPUs x GMIs per GPU) 1x2, 1x3, 2x2, 2x3, 3x2 (virtual devices), with
the GMIs of a device meeting over gloo or over shared memory."""

from __future__ import annotations

import threading

import pytest
import torch

from isaacgymenvs_gmi.comm.collectives import ThreadCollectives, ThreadHub
from isaacgymenvs_gmi.comm.reducers import make_reducer, mrr_valid
from isaacgymenvs_gmi.comm.routing import RoutedCollectives, build_collectives
from isaacgymenvs_gmi.comm.shared_memory import SharedMemoryCollectives
from isaacgymenvs_gmi.placement.layout import GmiLayout
from tests.helpers import free_port
from tests.speed import budget

LAYOUTS = [(1, 2), (1, 3), (2, 2), (2, 3), (3, 2)]
SHARD = 32


def strategies(layout: GmiLayout) -> list[str]:
    return ["mpr", "har", "auto"] + (["mrr"] if mrr_valid(layout.mpl()) else [])


def model() -> torch.nn.Module:
    """The same weights on every call, from a private generator (threads share torch's global
    RNG, so seeding it per call would race)."""
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ELU(), torch.nn.Linear(16, 3))
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return net.double()


def data(world: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return (
        torch.randn(world * SHARD, 6, generator=g, dtype=torch.float64),
        torch.randn(world * SHARD, 3, generator=g, dtype=torch.float64),
    )


def flat_grad(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    net = model()
    torch.nn.functional.mse_loss(net(x), y).backward()
    return torch.cat([p.grad.reshape(-1) for p in net.parameters()])


def union_gradient(world: int) -> torch.Tensor:
    return flat_grad(*data(world))


def shard_gradient(rank: int, world: int) -> torch.Tensor:
    x, y = data(world)
    return flat_grad(x[rank * SHARD : (rank + 1) * SHARD], y[rank * SHARD : (rank + 1) * SHARD])


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(((a - b).abs().max() / b.abs().max()) < 1e-6)


def twin_transport(rank: int, layout: GmiLayout, hub: ThreadHub, store, intra: str):
    """The in-process twin, with the device's GMIs meeting in shared memory if ``intra``."""
    threads = ThreadCollectives(rank, hub)
    device = tuple(layout.mpl()[layout.place(rank).device])
    if intra == "thread" or len(device) == 1:
        return threads
    # 40-byte rows: gradients of 163 float64 travel in many chunks
    shm = SharedMemoryCollectives(rank, device, store, f"dev{device}", row_bytes=40, timeout_s=30)
    return RoutedCollectives(threads, {device: shm})


@pytest.mark.parametrize("intra", ["thread", "shm"])
@pytest.mark.parametrize("g,t", LAYOUTS)
def test_in_process_twin(g, t, intra):
    import torch.distributed as dist

    layout = GmiLayout(1, g, t)
    world = layout.world_size
    expected = union_gradient(world)
    for strategy in strategies(layout):
        hub, out, store = ThreadHub(world), {}, dist.HashStore()

        def gmi(rank: int, strategy=strategy, hub=hub, out=out, store=store) -> None:
            flat = shard_gradient(rank, world)
            comm = twin_transport(rank, layout, hub, store, intra)
            make_reducer(strategy, layout, comm).mean(flat)
            out[rank] = flat

        threads = [threading.Thread(target=gmi, args=(r,)) for r in range(world)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(timeout=budget(60))
        assert sorted(out) == list(range(world)), strategy
        assert all(close(out[r], expected) for r in out), strategy


def run_gmi_processes(target, g: int, t: int, *args, timeout: float = 120) -> list[tuple]:
    """Spawn the ``g x t`` GMIs of a layout as real processes, each running ``target(rank, g,
    t, port, *args, results)`` and putting one tuple per strategy; returns them all."""
    import torch.multiprocessing as mp

    layout = GmiLayout(1, g, t)
    results = mp.get_context("spawn").Queue()
    procs = mp.start_processes(
        target,
        args=(g, t, free_port(), *args, results),
        nprocs=layout.world_size,
        join=False,
        start_method="spawn",
    )
    expected = layout.world_size * len(strategies(layout))
    got = [results.get(timeout=budget(timeout)) for _ in range(expected)]
    procs.join(timeout=budget(120))
    return got


CASES = [(g, t, intra) for intra in ("gloo", "shm") for g, t in LAYOUTS]
POOL = max(g * t for g, t in LAYOUTS)  # processes that serve every case in turn


def _pool_process(rank: int, port: int, results) -> None:
    """One of :data:`POOL` GMI processes in one gloo group, running every case in turn: a
    case's layout covers the group's first GMIs, and the others only help create its groups
    (as the actors of an async run do for its trainers); each case's keys in a store of its
    own."""
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.TCPStore(
        "127.0.0.1", port, POOL, is_master=rank == 0, timeout=timedelta(seconds=60)
    )
    dist.init_process_group("gloo", store=store, rank=rank, world_size=POOL)
    for case, (g, t, intra) in enumerate(CASES):
        layout = GmiLayout(1, g, t)
        own = dist.PrefixStore(f"case{case}/", store)
        comm, _ = build_collectives(rank, layout, intra, own, timeout_s=60)
        if comm is not None:
            for strategy in strategies(layout):
                flat = shard_gradient(rank, layout.world_size)
                make_reducer(strategy, layout, comm).mean(flat)
                results.put(((g, t, intra), strategy, rank, flat))
        dist.barrier()
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def real_gloo_results() -> dict[tuple, list[tuple]]:
    """(g, t, intra) -> [(strategy, rank, reduced gradient)] from real processes: a pool of
    spawned GMIs runs every case (a process each per case would import torch 40 times)."""
    import torch.multiprocessing as mp

    results = mp.get_context("spawn").Queue()
    procs = mp.start_processes(
        _pool_process, args=(free_port(), results), nprocs=POOL, join=False, start_method="spawn"
    )
    expected = sum(g * t * len(strategies(GmiLayout(1, g, t))) for g, t, _ in CASES)
    got: dict[tuple, list[tuple]] = {case: [] for case in CASES}
    for _ in range(expected):
        case, *row = results.get(timeout=budget(120))
        got[case].append(tuple(row))
    procs.join(timeout=budget(120))
    return got


@pytest.mark.parametrize("intra", ["gloo", "shm"])
@pytest.mark.parametrize("g,t", LAYOUTS)
def test_real_gloo_processes(g, t, intra, real_gloo_results):
    layout = GmiLayout(1, g, t)
    got = real_gloo_results[(g, t, intra)]
    expected = union_gradient(layout.world_size)
    assert sorted(rank for _, rank, _ in got) == sorted(
        rank for rank in range(layout.world_size) for _ in strategies(layout)
    )
    for strategy, rank, flat in got:
        assert close(flat, expected), (strategy, rank)
    assert {s for s, _, _ in got} == set(strategies(layout))
