"""Typed form of the async-training settings (``gmi.async.*``).

``gmi.trainers`` and ``gmi.channels`` sit beside the other ``gmi`` keys (:mod:`.gmi`); what only
the A3C runner reads lives under ``gmi.async``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from ._values import as_mapping, check_choice, check_int, check_known_keys, to_plain
from .errors import ConfigError

# Policy versions an actor's data may lag behind the trainer's policy before it is dropped.
# Measured with bench/async_lag.py (Ant, 1 trainer + 2 actor processes on 2 CPU cores, 80
# epochs; bench/results/async_lag.json): without a limit the queue ahead of the trainer holds
# data of lag 2-4 (mean 2.4) and the reward reached 261; with max_lag=1 a third of the actors'
# transitions are dropped, TTOP falls by 10%, and the reward reached 598 (4: 201, 2: 491); an
# earlier run with PPO anchored on the behaviour policy ranked them the same (1: 194, 4: 99).
# Fresh data is worth more than the extra samples: only data the trainer could not take in time
# is dropped (an actor-bound run, where the trainer waits, drops nothing).
DEFAULT_MAX_LAG = 1


def _check_float(key: str, value: Any, *, low: float, high: float = math.inf) -> float:
    constraint = (
        f"must be a number in [{low:g}, {high:g}]"
        if high < math.inf
        else (f"must be a number >= {low:g}")
    )
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, value, constraint)
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise ConfigError(key, value, constraint)
    return number


@dataclass(frozen=True)
class AsyncSettings:
    """``gmi.async.*``: how actors and trainers exchange experience and weights.

    Attributes:
        max_lag: drop a chunk whose policy version is more than this many versions behind the
            trainer's (counted and reported). >= 0; 0 keeps only data of the current policy.
        min_actors: the run stops cleanly when fewer actor GMIs than this are alive (>= 1).
        rho_bar, c_bar: V-trace truncation levels (IMPALA), rho_bar >= c_bar > 0.
        anchor: what PPO's ratio, clip and KL are taken against: ``proximal`` (the policy as
            the epoch starts; decoupled PPO) or ``behaviour`` (the actor's policy).
        chunk_steps: env steps per chunk an actor sends (its sequence unit); ``None``: the
            train config's ``horizon_length``.
        deadline_ms: the compressor sends what it holds of a channel after this long, even if
            below the transfer size.
        ring_slots: chunks each actor may have in flight to each trainer (credits); an actor
            waits when they are used up (back-pressure).
        serial: run every actor and trainer of the layout in this one process, in turn, over
            the in-process channel (for a debugger or tests; slow).
        transport: how experience and weights travel between an actor and a trainer:
            ``auto`` (on one GPU, device memory shared by CUDA IPC; otherwise host shared
            memory inside a node, torch.distributed point to point across nodes); ``ipc``
            (as auto, but refused where no GMIs share a GPU); ``shm`` (host shared memory
            inside a node even on one GPU: the host-staging baseline); ``p2p`` (point to point
            everywhere: to measure it, or to test it on one node).
    """

    max_lag: int = DEFAULT_MAX_LAG
    min_actors: int = 1
    rho_bar: float = 1.0
    c_bar: float = 1.0
    anchor: str = "proximal"
    chunk_steps: int | None = None
    deadline_ms: int = 50
    ring_slots: int = 2
    serial: bool = False
    transport: str = "auto"

    @classmethod
    def from_cfg(cls, node: Any, *, prefix: str = "gmi.async") -> AsyncSettings:
        given = as_mapping(prefix, node)
        check_known_keys(prefix, given, tuple(f.name for f in fields(cls)))
        d = cls()
        rho_bar = _check_float(f"{prefix}.rho_bar", given.get("rho_bar", d.rho_bar), low=1e-6)
        c_bar = _check_float(f"{prefix}.c_bar", given.get("c_bar", d.c_bar), low=1e-6)
        if c_bar > rho_bar:
            raise ConfigError(
                f"{prefix}.c_bar", c_bar, f"must be <= gmi.async.rho_bar ({rho_bar:g}) (V-trace)"
            )
        chunk = to_plain(given.get("chunk_steps", d.chunk_steps))
        serial = to_plain(given.get("serial", d.serial))
        if not isinstance(serial, bool):
            raise ConfigError(f"{prefix}.serial", serial, "must be true or false")
        return cls(
            max_lag=check_int(f"{prefix}.max_lag", given.get("max_lag", d.max_lag), minimum=0),
            min_actors=check_int(
                f"{prefix}.min_actors", given.get("min_actors", d.min_actors), minimum=1
            ),
            rho_bar=rho_bar,
            c_bar=c_bar,
            anchor=check_choice(
                f"{prefix}.anchor", given.get("anchor", d.anchor), ("proximal", "behaviour")
            ),
            chunk_steps=None
            if chunk is None
            else check_int(f"{prefix}.chunk_steps", chunk, minimum=1),
            deadline_ms=check_int(
                f"{prefix}.deadline_ms", given.get("deadline_ms", d.deadline_ms), minimum=1
            ),
            ring_slots=check_int(
                f"{prefix}.ring_slots", given.get("ring_slots", d.ring_slots), minimum=1
            ),
            serial=serial,
            transport=check_choice(
                f"{prefix}.transport",
                given.get("transport", d.transport),
                ("auto", "ipc", "shm", "p2p"),
            ),
        )
