"""The in-process channel twin, the dispenser and the exactly-once ledger."""

from __future__ import annotations

import queue
import random
import threading
import time

import pytest
import torch

from isaacgymenvs_gmi.channels import (
    CHANNEL_KINDS,
    ExactlyOnceError,
    InProcessChannel,
    Ledger,
    dispense,
)
from isaacgymenvs_gmi.channels.in_process import ChannelClosed

T, N, OBS, ACT = 4, 3, 5, 2


def rollout(value: float) -> dict[str, torch.Tensor]:
    shapes = {"obs": (OBS,), "states": (0,), "actions": (ACT,), "mu": (ACT,), "sigma": (ACT,)}
    out = {k: torch.full((T, N, *shapes.get(k, ())), value) for k in CHANNEL_KINDS}
    out["terminated"] = torch.zeros(T, N, dtype=torch.bool)
    out["truncated"] = torch.zeros(T, N, dtype=torch.bool)
    out["version"] = torch.full((T, N), int(value), dtype=torch.int64)
    return out


def test_dispense_splits_a_chunk_by_kind_in_a_fixed_order():
    chunks = dispense(actor=2, seq=5, rollout=rollout(1.0))
    assert [c.kind for c in chunks] == list(CHANNEL_KINDS)
    assert all((c.actor, c.seq) == (2, 5) for c in chunks)
    assert chunks[0].data.shape == (T, N, OBS) and chunks[-1].data.dtype == torch.int64


def test_dispense_refuses_missing_kinds_and_mismatched_steps():
    broken = rollout(1.0)
    del broken["mu"]
    with pytest.raises(ValueError, match="lacks"):
        dispense(0, 0, broken)
    broken = rollout(1.0)
    broken["rewards"] = torch.zeros(T + 1, N)
    with pytest.raises(ValueError, match="disagree"):
        dispense(0, 0, broken)


def test_producers_in_threads_deliver_every_chunk_once_and_in_order():
    actors, per_actor = 4, 60
    channel, ledger = InProcessChannel(capacity=3), Ledger()

    def produce(actor: int) -> None:
        rng = random.Random(actor)
        for seq in range(per_actor):
            for chunk in dispense(actor, seq, rollout(float(seq))):
                if chunk.kind == "rewards":  # one channel is enough to follow a stream
                    channel.send(chunk)
            time.sleep(rng.random() * 1e-3)  # random interleavings

    threads = [threading.Thread(target=produce, args=(a,)) for a in range(actors)]
    for t in threads:
        t.start()
    seen = []
    for _ in range(actors * per_actor):
        chunk = channel.recv(timeout=10)
        assert channel.depth() <= 3  # bounded: producers waited
        ledger.accept(chunk.actor, chunk.seq, chunk.data.numel(), keep=chunk.seq % 7 != 0)
        assert float(chunk.data[0, 0]) == chunk.seq  # the data travelled with its number
        seen.append((chunk.actor, chunk.seq))
    for t in threads:
        t.join()
    channel.close()
    with pytest.raises(ChannelClosed):
        channel.recv(timeout=1)
    assert sorted(seen) == [(a, s) for a in range(actors) for s in range(per_actor)]
    produced = actors * per_actor * T * N
    assert ledger.dropped == actors * len(range(0, per_actor, 7)) * T * N
    assert "in flight at stop 0" in ledger.balance(produced, in_flight=0)


def test_the_ledger_refuses_duplicates_gaps_and_an_unbalanced_end():
    ledger = Ledger()
    ledger.accept(0, 0, 10)
    with pytest.raises(ExactlyOnceError, match="again"):
        ledger.accept(0, 0, 10)
    with pytest.raises(ExactlyOnceError, match="before chunk 1"):
        ledger.accept(0, 2, 10)
    ledger.accept(1, 0, 5)  # actors are independent streams
    with pytest.raises(ExactlyOnceError, match="unbalanced"):
        ledger.balance(produced=20, in_flight=0)
    assert ledger.balance(produced=20, in_flight=5).startswith("produced 20 = consumed 15")


def test_a_full_channel_makes_the_producer_wait():
    channel = InProcessChannel(capacity=1)
    first, second = dispense(0, 0, rollout(0.0))[:2]
    channel.send(first)
    with pytest.raises(queue.Full):
        channel.send(second, timeout=0.05)
    assert channel.recv(timeout=1) is first
    channel.send(second, timeout=1)
    channel.close()  # does not wait on a full channel
    assert channel.recv(timeout=1) is second
    with pytest.raises(ChannelClosed):
        channel.recv(timeout=1)
    with pytest.raises(ValueError):
        InProcessChannel(capacity=0)
