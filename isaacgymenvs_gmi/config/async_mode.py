"""Typed form of the async-training settings (``gmi.async.*``): the async mode's own settings
(its ``Mode.settings``), read only in that mode. Their channel fields (chunk, ring, deadline,
transport) shape every actor's channels; a serving run's take the defaults.

``gmi.trainers`` and ``gmi.channels`` sit beside the other ``gmi`` keys (:mod:`.gmi`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError
from .schema import FLAG, Choice, Int, Real, Settings, setting

# Policy versions an actor's data may lag behind the trainer's policy before it is dropped.
# Measured with bench/async_lag.py (Ant, 1 trainer + 2 actor processes on 2 CPU cores, 80
# epochs; bench/results/async_lag.json): without a limit the queue ahead of the trainer holds
# data of lag 2-4 (mean 2.4) and the reward reached 261; with max_lag=1 a third of the actors'
# transitions are dropped, TTOP falls by 10%, and the reward reached 598 (4: 201, 2: 491); an
# earlier run with PPO anchored on the behaviour policy ranked them the same (1: 194, 4: 99).
# Fresh data is worth more than the extra samples: only data the trainer could not take in time
# is dropped (an actor-bound run, where the trainer waits, drops nothing).
DEFAULT_MAX_LAG = 1


@dataclass(frozen=True)
class AsyncSettings(Settings):
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

    PREFIX = "gmi.async"
    max_lag: int = setting(DEFAULT_MAX_LAG, Int(0))
    min_actors: int = setting(1, Int(1))
    rho_bar: float = setting(1.0, Real(1e-6))
    c_bar: float = setting(1.0, Real(1e-6))
    anchor: str = setting("proximal", Choice(("proximal", "behaviour")))
    chunk_steps: int | None = setting(None, Int(1, optional=True))
    deadline_ms: int = setting(50, Int(1))
    ring_slots: int = setting(2, Int(1))
    serial: bool = setting(False, FLAG)
    transport: str = setting("auto", Choice(("auto", "ipc", "shm", "p2p")))

    def cross_check(self, prefix: str) -> None:
        if self.c_bar > self.rho_bar:
            raise ConfigError(
                f"{prefix}.c_bar",
                self.c_bar,
                f"must be <= {prefix}.rho_bar ({self.rho_bar:g}) (V-trace)",
            )
