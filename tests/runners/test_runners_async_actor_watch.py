"""A trainer's watch over its actors (real in-process routes, real processes): a running actor
whose heartbeat is stale is dropped (killed) and named; a busy, stopped, dead, remote or
not yet started one is not; before its first chunk it gets the start-up allowance."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from isaacgymenvs_gmi.channels import Dispenser, Route, channel_specs, route_shape
from isaacgymenvs_gmi.channels.route import (
    ACTOR_PID,
    ACTOR_STATE,
    HEARTBEAT_NS,
    RUNNING,
    STOPPED,
    ChannelClosed,
)
from isaacgymenvs_gmi.runners.async_ppo.actor_watch import ActorWatch
from tests.channels.traffic import KINDS, push_chunk

T, N = 4, 3
S = 1_000_000_000  # ns per s


@pytest.fixture
def sleeper():
    """A live process that does nothing (a hung actor), killed at the end."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield child
    child.kill()
    child.wait()


def route_of(pid: int, beat_ns: int, state: int = RUNNING, chunks: int = 0) -> Route:
    route = Route.in_process(route_shape(channel_specs("uni", KINDS), N, T, 4, compress=False))
    route.set_control(ACTOR_PID, pid)
    route.set_control(ACTOR_STATE, state)
    route.set_control(HEARTBEAT_NS, beat_ns)
    for _ in range(chunks):
        route.count_produced(T * N)
    return route


class Clock:
    def __init__(self, now_ns: int):
        self.now_ns = now_ns

    def __call__(self) -> int:
        return self.now_ns


def watch_of(routes, clock, killed):
    return ActorWatch(routes, timeout_s=5, startup_s=50, clock_ns=clock, kill=killed.append)


def test_a_running_actor_silent_past_the_timeout_is_dropped_once_and_named(sleeper, caplog):
    clock, killed = Clock(100 * S), []
    watch = watch_of({2: route_of(sleeper.pid, 96 * S, chunks=1)}, clock, killed)
    assert watch.check() == [] and killed == []  # 4 s: within the timeout
    clock.now_ns = 102 * S
    assert watch.check() == [2] and killed == [sleeper.pid]
    assert "actor GMI 2 (pid" in caplog.text and "has not stepped for 6 s" in caplog.text
    clock.now_ns = 110 * S
    assert watch.check() == [] and killed == [sleeper.pid]  # once


def test_before_its_first_chunk_an_actor_gets_the_startup_allowance(sleeper):
    clock, killed = Clock(130 * S), []
    watch = watch_of({1: route_of(sleeper.pid, 100 * S)}, clock, killed)
    assert watch.check() == []  # 30 s silent, but it may still be compiling
    clock.now_ns = 151 * S
    assert watch.check() == [1] and killed == [sleeper.pid]


def test_stopped_dead_remote_starting_and_finished_actors_are_left_alone(sleeper):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    os.kill(sleeper.pid, signal.SIGSTOP)
    try:
        time.sleep(0.2)
        clock, killed = Clock(1000 * S), []
        routes = {
            1: route_of(sleeper.pid, S, chunks=1),  # stopped by a signal: the launcher's to clear
            2: route_of(dead.pid, S, chunks=1),  # gone
            3: route_of(0, S, chunks=1),  # on another node
            4: route_of(sleeper.pid, 0),  # not started
            5: route_of(sleeper.pid, S, STOPPED, chunks=1),  # said it stopped
        }
        assert watch_of(routes, clock, killed).check() == [] and killed == []
    finally:
        os.kill(sleeper.pid, signal.SIGCONT)


def test_an_actor_waiting_for_room_keeps_beating():
    """A full route (the trainer is behind) is not a hung actor: the wait beats."""
    route = route_of(os.getpid(), 1, chunks=0)
    stopping = []
    dispenser = Dispenser(1, [route], deadline_s=1.0, abort=lambda: bool(stopping))
    seq = 0
    while route.free() > 0:
        push_chunk(dispenser, seq, N)
        seq += 1
    before = route.control(HEARTBEAT_NS)
    stopping.append(True)  # the wait gives up at once, after one look
    with pytest.raises(ChannelClosed, match="stopped while waiting"):
        dispenser.begin_chunk()
    assert route.control(HEARTBEAT_NS) > before
