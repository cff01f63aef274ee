"""Gradient reduction with gradients on a GPU, in real processes: inside one GPU through CUDA IPC
device buffers or host-staged shared memory (and ``auto``, which measures both); across GPUs
through NCCL where the machine has two or more.

Marked ``gpu``: skipped on machines without CUDA (CI); run them where a GPU is lent.
"""

from __future__ import annotations

import pytest
import torch

from isaacgymenvs_gmi.comm.reducers import make_reducer
from isaacgymenvs_gmi.placement.layout import GmiLayout
from tests.comm.test_comm_reduction import (
    run_gmi_processes,
    shard_gradient,
    strategies,
    union_gradient,
)

pytestmark = pytest.mark.gpu


def _gmi_on_gpu(rank: int, g: int, t: int, port: int, intra: str, gpu_of, results) -> None:
    from datetime import timedelta

    import torch.distributed as dist

    from isaacgymenvs_gmi.comm.routing import build_collectives

    layout = GmiLayout(1, g, t)
    device = torch.device("cuda", gpu_of(layout, rank))
    store = dist.TCPStore(
        "127.0.0.1", port, layout.world_size, is_master=rank == 0, timeout=timedelta(seconds=60)
    )
    dist.init_process_group("gloo", store=store, rank=rank, world_size=layout.world_size)
    comm, choice = build_collectives(rank, layout, intra, store, timeout_s=60, device=device)
    for strategy in strategies(layout):
        flat = shard_gradient(rank, layout.world_size).float().to(device)
        make_reducer(strategy, layout, comm).mean(flat)
        results.put((strategy, rank, flat.cpu().double(), str(choice)))
    dist.barrier()
    dist.destroy_process_group()


def _same_gpu(layout: GmiLayout, rank: int) -> int:
    return 0


def _own_gpu(layout: GmiLayout, rank: int) -> int:
    return layout.place(rank).device


def _run(g: int, t: int, intra: str, gpu_of) -> list[tuple]:
    got = run_gmi_processes(_gmi_on_gpu, g, t, intra, gpu_of, timeout=180)
    expected = union_gradient(g * t)
    for strategy, rank, flat, _ in got:
        # float32 on the GPU: the union gradient within float32 rounding
        assert ((flat - expected).abs().max() / expected.abs().max()) < 1e-5, (strategy, rank)
    return got


@pytest.mark.parametrize("intra", ["ipc", "shm", "auto"])
def test_gmis_sharing_one_gpu_reduce_exactly(intra):
    got = _run(1, 3, intra, _same_gpu)
    choice = got[0][3]
    assert choice.startswith("inside a device: ")
    if intra == "auto":
        assert "measured: ipc" in choice
    else:
        assert choice.startswith(f"inside a device: {intra},")


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="NCCL across GPUs needs two GPUs")
@pytest.mark.parametrize("intra", ["ipc", "shm"])
def test_across_gpus_nccl(intra):
    got = _run(2, 2, intra, _own_gpu)
    assert all("across devices: nccl" in c for *_, c in got)
