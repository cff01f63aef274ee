"""Typed form of ``gmi.async.*``: the async mode's own settings (its ``Mode.settings``), read
only in that mode; a serving run's channels take the defaults. ``gmi.trainers`` and
``gmi.channels`` sit beside the other ``gmi`` keys (:mod:`.gmi`).
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import ConfigError
from .schema import FLAG, Choice, Int, Real, Settings, setting

# Chosen with bench/async_lag.py (bench/results/async_lag.json): on Ant, max_lag=1 drops a
# third of the actors' data yet reaches more than twice the reward of no limit. Fresh data is
# worth more than the extra samples; an actor-bound run (the trainer waits) drops nothing.
DEFAULT_MAX_LAG = 1


@dataclass(frozen=True)
class AsyncSettings(Settings):
    """``gmi.async.*``: how actors and trainers exchange experience and weights.

    Attributes:
        max_lag: drop a chunk whose policy version is more than this many versions behind the
            trainer's (counted and reported); 0 keeps only data of the current policy.
        min_actors: the run stops cleanly when fewer actor GMIs than this are alive.
        rho_bar, c_bar: V-trace truncation levels (IMPALA), rho_bar >= c_bar > 0.
        anchor: what PPO's ratio, clip and KL are taken against: ``proximal`` (the policy as
            the epoch starts; decoupled PPO) or ``behaviour`` (the actor's policy).
        chunk_steps: env steps per chunk an actor sends; ``None``: ``horizon_length``.
        deadline_ms: the compressor sends what it holds of a channel after this long, even if
            below the transfer size.
        ring_slots: chunks each actor may have in flight to each trainer (credits; then it
            waits).
        serial: run every actor and trainer in this one process, in turn, over the in-process
            channel (for a debugger or tests; slow).
        transport: ``auto`` (CUDA IPC on one GPU; otherwise host shared memory inside a node,
            torch.distributed point to point across nodes); ``ipc`` (as auto, but refused where
            no GMIs share a GPU); ``shm`` (host shared memory even on one GPU: the baseline);
            ``p2p`` (point to point everywhere).
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
