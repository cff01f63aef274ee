"""Channels deliver every chunk exactly once, whole and in each actor's order: in one process
(the twin) and from real producer processes over shared memory; uni and multi alike."""

from __future__ import annotations

import multiprocessing as mp
import os
import random
import time

import pytest
import torch
import torch.distributed as dist

from isaacgymenvs_gmi.channels import (
    Collector,
    Dispenser,
    ExactlyOnceError,
    Ledger,
    Route,
    WeightsBoard,
    balance_line,
    channel_specs,
    route_shape,
)
from isaacgymenvs_gmi.channels.route import PRODUCED_TRANSITIONS, ChannelClosed
from tests.channels.traffic import KINDS, expected_chunk, produce, push_chunk
from tests.speed import budget

T, N = 4, 3


def shape_for(mode: str, slots: int = 2):
    return route_shape(channel_specs(mode, KINDS), N, T, slots, compress=mode == "multi")


def carried():
    return tuple(k for k in KINDS if k.row_bytes)


def drain(collector: Collector, want: int, timeout_s: float = 60.0) -> list:
    got, deadline = [], time.monotonic() + budget(timeout_s)
    while len(got) < want:
        got.extend(collector.poll())
        assert time.monotonic() < deadline, f"only {len(got)} of {want} chunks arrived"
        time.sleep(0.001)
    return got


def check_chunks(chunks: list, actors: dict[int, int]) -> None:
    ledger = Ledger()
    by_actor: dict[int, list[int]] = {}
    for chunk in chunks:
        ledger.accept(chunk.actor, chunk.route_seq, chunk.transitions)
        by_actor.setdefault(chunk.actor, []).append(chunk.seq)
        want = expected_chunk(chunk.actor, chunk.seq, T, N)
        for name, tensor in chunk.data.items():
            assert torch.equal(tensor, want[name]), (chunk.actor, chunk.seq, name)
    assert by_actor == {a: list(range(n)) for a, n in actors.items()}
    assert ledger.consumed == sum(actors.values()) * T * N


@pytest.mark.parametrize("mode", ["multi", "uni"])
def test_in_process_twin_threads_deliver_every_chunk_once_in_order(mode):
    import threading

    routes = {a: Route.in_process(shape_for(mode)) for a in (1, 2, 3)}
    counts = {1: 7, 2: 5, 3: 9}
    threads = [
        threading.Thread(
            target=produce,
            args=(Dispenser(a, [routes[a]], 1.0, lambda: False), counts[a], N, a, 0.002),
        )
        for a in routes
    ]
    for th in threads:
        th.start()
    collector = Collector(list(routes), list(routes.values()), carried())
    chunks = drain(collector, sum(counts.values()))
    for th in threads:
        th.join()
    check_chunks(chunks, counts)
    assert collector.partial() == 0 and collector.depth() == 0


def test_uni_and_multi_deliver_identical_chunks_with_different_transfer_counts():
    results, transfers = {}, {}
    for mode in ("multi", "uni"):
        route = Route.in_process(shape_for(mode, slots=4))
        dispenser = Dispenser(0, [route], 1.0, lambda: False)
        collector = Collector([0], [route], carried())
        chunks = []
        for seq in range(3):
            push_chunk(dispenser, seq, N)
            chunks.extend(collector.poll())
        results[mode], transfers[mode] = chunks, dispenser.transfers
    for a, b in zip(results["multi"], results["uni"], strict=True):
        assert (a.actor, a.seq) == (b.actor, b.seq)
        assert all(torch.equal(a.data[k], b.data[k]) for k in a.data)
    channels = len(channel_specs("multi", KINDS))
    assert transfers["multi"] == 3 * channels  # one transfer per channel per chunk
    assert transfers["uni"] == 3 * T  # one transfer per step


def test_a_full_route_makes_the_actor_wait_and_abort_ends_the_wait():
    route = Route.in_process(shape_for("multi", slots=2))
    stop = {"now": False}
    dispenser = Dispenser(0, [route], 1.0, lambda: stop["now"])
    produce(dispenser, 2, N, 0, 0.0)  # fills both credits
    assert route.free() == 0
    stop["now"] = True
    with pytest.raises(ChannelClosed):
        produce(dispenser, 1, N, 0, 0.0)
    assert route.control(PRODUCED_TRANSITIONS) == 2 * T * N  # the aborted chunk is not produced


def test_the_migrator_sends_each_chunk_to_the_trainer_with_most_credit():
    fast, slow = Route.in_process(shape_for("multi", 3)), Route.in_process(shape_for("multi", 3))
    dispenser = Dispenser(0, [fast, slow], 1.0, lambda: False)
    take_fast = Collector([0], [fast], carried())
    got_fast = []
    for seq in range(6):
        push_chunk(dispenser, seq, N)
        got_fast.extend(take_fast.poll())  # only the first trainer keeps up
    got_slow = Collector([0], [slow], carried()).poll()
    assert len(got_fast) + len(got_slow) == 6
    assert len(got_fast) > len(got_slow)  # the consumer that keeps up gets more
    assert [c.route_seq for c in got_fast] == list(range(len(got_fast)))
    assert [c.route_seq for c in got_slow] == list(range(len(got_slow)))


def _shape(mode: str, device: str | None):
    return shape_for(mode) if device is None else shape_for(mode).data_apart()


def _producer(
    path: str, world: int, actor: int, mode: str, chunks: int, seed: int, device: str | None
) -> None:
    store = dist.FileStore(path, world)
    route = Route.attach(_shape(mode, device), store, f"route{actor}", device or "cpu")
    board = WeightsBoard.attach(8, store, "weights")
    dispenser = Dispenser(actor, [route], 0.5, lambda: board.stopping)
    produce(dispenser, chunks, N, seed, 0.003, device=device or "cpu")
    store.set(f"done{actor}", "1")


DATA = [
    pytest.param(None, id="host"),  # data in the route's segment
    pytest.param("cpu", id="apart-cpu"),  # data in a buffer of its own (the IPC layout)
    pytest.param("cuda", id="apart-cuda-ipc", marks=pytest.mark.gpu),
]


@pytest.mark.parametrize("device", DATA)
@pytest.mark.parametrize("mode", ["multi", "uni"])
def test_real_producer_processes_over_shared_memory(tmp_path, mode, device):
    """``device``: where the routes keep their data apart (None: in the host segment); on a
    GPU the producers make their steps there and the data crosses processes by CUDA IPC."""
    counts = {1: 6, 2: 9, 3: 4}
    store = dist.FileStore(str(tmp_path / "store"), len(counts) + 1)
    routes, paths = {}, []
    for actor in counts:
        shape = _shape(mode, device)
        routes[actor], names = Route.create(shape, store, f"route{actor}", device or "cpu")
        paths.extend(names)
    assert len(paths) == len(counts) * (2 if device == "cpu" else 1)
    board, board_path = WeightsBoard.create(8, store, "weights")
    paths.append(board_path)
    context = mp.get_context("spawn")
    procs = [
        context.Process(
            target=_producer,
            args=(
                str(tmp_path / "store"),
                len(counts) + 1,
                a,
                mode,
                n,
                random.randrange(1 << 30),
                device,
            ),
        )
        for a, n in counts.items()
    ]
    try:
        for p in procs:
            p.start()
        collector = Collector(list(routes), list(routes.values()), carried())
        chunks = drain(collector, sum(counts.values()))
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
    finally:
        for p in procs:
            p.kill() if p.is_alive() else None
        for path in paths:
            if os.path.exists(path):
                os.unlink(path)
    for chunk in chunks:
        assert {t.device.type for t in chunk.data.values()} == {(device or "cpu")}
        chunk.data = {k: v.cpu() for k, v in chunk.data.items()}
    check_chunks(chunks, counts)
    produced = sum(r.control(PRODUCED_TRANSITIONS) for r in routes.values())
    assert produced == sum(counts.values()) * T * N


def test_ledger_refuses_duplicates_and_gaps():
    ledger = Ledger()
    ledger.accept(1, 0, 10)
    with pytest.raises(ExactlyOnceError, match="again"):
        ledger.accept(1, 0, 10)
    with pytest.raises(ExactlyOnceError, match="before chunk 1"):
        ledger.accept(1, 2, 10)
    ledger.accept(2, 0, 5, "dropped")
    ledger.accept(1, 1, 7, "in_flight")
    assert balance_line(22, *ledger.totals()) == (
        "produced 22 = consumed 10 + dropped for lag 5 + in flight at stop 7"
    )
    with pytest.raises(ExactlyOnceError, match="unbalanced"):
        balance_line(23, *ledger.totals())


def test_a_weights_board_is_whole_before_its_path_is_published(tmp_path):
    """An actor that attaches the moment the path appears sees the policy size (a race once
    seen: the size word was written after publishing)."""
    seen = {}

    class AttachOnSet:
        def __init__(self):
            self.inner = dist.FileStore(str(tmp_path / "store"), 1)

        def set(self, key, value):
            self.inner.set(key, value)
            seen["board"] = WeightsBoard.attach(8, self.inner, key)  # raises on a size of 0

        def get(self, key):
            return self.inner.get(key)

    board, path = WeightsBoard.create(8, AttachOnSet(), "weights")
    try:
        board.publish(torch.arange(8.0), version=3)
        out = torch.empty(8)
        assert seen["board"].read_newer(-1, out) == 3 and torch.equal(out, torch.arange(8.0))
    finally:
        os.unlink(path)
