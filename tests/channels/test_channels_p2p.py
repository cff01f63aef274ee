"""Routes and the weights board mirrored point to point: every chunk arrives once, whole and in
order, credits hold the actor back, weights and the stop request reach the actor; over the
in-process twin (queues) and over real gloo send/recv between processes."""

from __future__ import annotations

import multiprocessing as mp
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from isaacgymenvs_gmi.channels import Collector, Dispenser, Route, WeightsBoard
from isaacgymenvs_gmi.channels.p2p import (
    BoardReceiver,
    BoardSender,
    QueueHub,
    RouteDownlink,
    RouteUplink,
    TorchPointToPoint,
)
from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, PRODUCED_TRANSITIONS, STOPPED
from tests.channels.test_channels_delivery import N, T, carried, check_chunks, drain, shape_for
from tests.channels.traffic import produce, push_chunk
from tests.helpers import free_port
from tests.speed import budget

TRAINER = 0


def test_the_twin_mirrors_every_chunk_once_in_order_with_the_actors_control_words():
    hub = QueueHub(timeout_s=30)
    counts = {1: 7, 2: 5}
    actor_routes = {a: Route.in_process(shape_for("multi")) for a in counts}
    trainer_routes = {a: Route.in_process(shape_for("multi")) for a in counts}
    downs = [RouteDownlink(trainer_routes[a], hub.end(TRAINER), a) for a in counts]
    ups = {a: RouteUplink(actor_routes[a], hub.end(a), TRAINER) for a in counts}
    threads = []
    for a, n in counts.items():
        actor_routes[a].set_control(ACTOR_PID, 4242)
        dispenser = Dispenser(a, [actor_routes[a]], 1.0, lambda: False)
        args = (dispenser, n, N, a, 0.002)
        threads.append(threading.Thread(target=produce, args=args))
    for th in threads:
        th.start()
    collector = Collector(list(counts), [trainer_routes[a] for a in counts], carried())
    chunks = drain(collector, sum(counts.values()))
    for th in threads:
        th.join()
    check_chunks(chunks, counts)
    for a, route in actor_routes.items():
        route.set_control(ACTOR_STATE, STOPPED)
        ups[a].closing.set()  # the actors end their streams first, as in a run
    for down in downs:
        down.close(10)
    for up in ups.values():
        up.close(10)
    for a, n in counts.items():
        mirror = trainer_routes[a]
        assert mirror.control(PRODUCED_TRANSITIONS) == n * T * N
        assert mirror.control(ACTOR_STATE) == STOPPED
        assert mirror.control(ACTOR_PID) == 0  # a process of another node is never looked up
        assert ups[a].error is None and all(r.free() > 0 for r in [actor_routes[a]])


def test_credits_come_back_only_as_the_trainer_releases():
    hub = QueueHub(timeout_s=30)
    actor, trainer = Route.in_process(shape_for("multi")), Route.in_process(shape_for("multi"))
    up = RouteUplink(actor, hub.end(1), TRAINER)
    down = RouteDownlink(trainer, hub.end(TRAINER), 1)
    dispenser = Dispenser(1, [actor], 1.0, lambda: False)
    for seq in range(2):  # both credits
        push_chunk(dispenser, seq, N)
    deadline = time.monotonic() + budget(10)
    while trainer.depth() < 2:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    time.sleep(0.05)
    assert actor.free() == 0  # nothing released yet: the actor must wait
    assert len(Collector([1], [trainer], carried()).poll()) == 2
    while actor.free() < 2:
        assert time.monotonic() < deadline, "credits did not come back"
        time.sleep(0.001)
    up.closing.set()
    down.close(10)
    up.close(10)


def test_weights_and_the_stop_request_reach_the_actor_and_a_fresh_copy_is_not_published():
    hub = QueueHub(timeout_s=30)
    board, copy = WeightsBoard.in_process(6), WeightsBoard.in_process(6)
    assert not copy.published
    board.publish(torch.zeros(6), 0)
    sender = BoardSender(board, hub.end(TRAINER), 1)
    receiver = BoardReceiver(copy, hub.end(1), TRAINER)
    out = torch.empty(6)
    for version in (1, 2, 3):
        board.publish(torch.full((6,), float(version)), version)
        deadline = time.monotonic() + budget(10)
        while copy.version < version:
            assert time.monotonic() < deadline
            time.sleep(0.001)
    assert (
        copy.published and copy.read_newer(0, out) == 3 and torch.equal(out, torch.full((6,), 3.0))
    )
    board.request_stop()
    deadline = time.monotonic() + budget(10)
    while not copy.stopping:
        assert time.monotonic() < deadline
        time.sleep(0.001)
    sender.close(10)
    receiver.close(10)
    assert sender.error is None and receiver.error is None


def _gmi(rank: int, world: int, port: int, counts: dict[int, int], out) -> None:
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world)
    link = TorchPointToPoint()
    if rank == TRAINER:
        routes = {a: Route.in_process(shape_for("uni")) for a in counts}
        downs = [RouteDownlink(routes[a], link, a) for a in counts]
        chunks = drain(Collector(list(counts), list(routes.values()), carried()), 12)
        arrived = [(c.actor, c.seq, c.route_seq, c.data) for c in chunks]
        out.put([(a, q, r, {k: v.numpy() for k, v in d.items()}) for a, q, r, d in arrived])
        for down in downs:
            down.close(30)
    else:
        route = Route.in_process(shape_for("uni"))
        up = RouteUplink(route, link, TRAINER)
        produce(Dispenser(rank, [route], 1.0, lambda: False), counts[rank], N, rank, 0.003)
        up.close(30)
    dist.barrier()
    dist.destroy_process_group()


def test_real_processes_over_gloo_point_to_point():
    counts, world = {1: 5, 2: 7}, 3
    context = mp.get_context("spawn")
    out, port = context.Queue(), free_port()
    procs = [context.Process(target=_gmi, args=(r, world, port, counts, out)) for r in range(world)]
    for p in procs:
        p.start()
    try:
        got = out.get(timeout=budget(120))
        for p in procs:
            p.join(60)
            assert p.exitcode == 0
    finally:
        for p in procs:
            p.kill() if p.is_alive() else None

    class Arrived:
        def __init__(self, actor, seq, route_seq, data):
            self.actor, self.seq, self.route_seq, self.data = actor, seq, route_seq, data
            self.transitions = T * N

    as_torch = [(a, q, r, {k: torch.from_numpy(v) for k, v in d.items()}) for a, q, r, d in got]
    check_chunks([Arrived(*c) for c in as_torch], counts)


def test_a_dead_link_marks_the_actor_stopped_at_the_trainer():
    hub = QueueHub(timeout_s=0.3)  # the actor never speaks: the trainer's receive gives up
    trainer = Route.in_process(shape_for("multi"))
    down = RouteDownlink(trainer, hub.end(TRAINER), 1)
    deadline = time.monotonic() + budget(10)
    while trainer.control(ACTOR_STATE) != STOPPED:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert down.error is not None
    down.closing.set()
