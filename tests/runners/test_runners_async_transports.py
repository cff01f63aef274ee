"""Which transport each actor -> trainer route takes (``gmi.async.transport``), from the layout
and the GMI backend: a pure function, table-driven."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from isaacgymenvs_gmi.channels.wiring import describe_transports, peer_transports
from isaacgymenvs_gmi.placement.layout import GmiLayout


def plan(layout: GmiLayout, backend: str):
    return SimpleNamespace(layout=layout, gmi_backend=backend)


@pytest.mark.parametrize(
    ("layout", "backend", "transport", "on_gpu", "rank", "peers", "expected"),
    [
        # one GPU under MPS: actors and trainer open each other's device memory
        (GmiLayout(1, 1, 3), "mps", "auto", True, 0, (1, 2), {1: "ipc", 2: "ipc"}),
        (GmiLayout(1, 1, 3), "direct", "ipc", True, 1, (0,), {0: "ipc"}),
        # host staging asked for, or no way to share device memory
        (GmiLayout(1, 1, 3), "mps", "shm", True, 0, (1, 2), {1: "shm", 2: "shm"}),
        (GmiLayout(1, 1, 3), "mig", "auto", True, 0, (1, 2), {1: "shm", 2: "shm"}),
        (GmiLayout(1, 1, 3), "cpu", "auto", False, 0, (1, 2), {1: "shm", 2: "shm"}),
        # two GPUs of a node: the trainer's own GPU by IPC, the other through the host
        (GmiLayout(1, 2, 2), "mps", "auto", True, 0, (1, 2, 3), {1: "ipc", 2: "shm", 3: "shm"}),
        # across nodes always point to point; p2p asked for: everywhere
        (GmiLayout(2, 1, 2), "mps", "auto", True, 0, (1, 2, 3), {1: "ipc", 2: "p2p", 3: "p2p"}),
        (GmiLayout(1, 1, 3), "mps", "p2p", True, 0, (1, 2), {1: "p2p", 2: "p2p"}),
    ],
)
def test_peer_transports(layout, backend, transport, on_gpu, rank, peers, expected):
    assert peer_transports(plan(layout, backend), transport, rank, peers, on_gpu) == expected


def test_the_trainer_line_names_routes_off_host_shared_memory():
    assert describe_transports({1: "shm", 2: "shm"}) == ""
    assert describe_transports({1: "ipc", 2: "p2p", 3: "ipc"}) == (
        " (1 point to point, 2 CUDA IPC)"
    )
