"""An async trainer's account of the experience its actors produced, over every trainer: the
channels' counters each epoch and, at the end, the balance
``produced = consumed + dropped for lag + in flight at stop``."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

import torch

from isaacgymenvs_gmi.channels import Batcher, Collector, Ledger, Route, balance_line
from isaacgymenvs_gmi.channels.route import ACTOR_PID, ACTOR_STATE, PRODUCED_TRANSITIONS, STOPPED
from isaacgymenvs_gmi.channels.wiring import TrainerLinks
from isaacgymenvs_gmi.gmi.liveness import is_alive
from isaacgymenvs_gmi.runners.result import RunResult

from .bookkeeping import Bookkeeping
from .team import SoloTrainer, TrainerTeam
from .telemetry import Rates

log = logging.getLogger(__name__)
ACTORS_STOP_TIMEOUT_S = 30.0
STOP_POLL_S = 0.01


@dataclass(frozen=True)
class ChannelCounters:
    """Transitions so far over every trainer: ``produced`` per actor GMI, ``consumed``
    (trained on), ``dropped`` (too old); ``depth``: chunks queued in rings and batchers."""

    produced: dict[int, int]
    consumed: int
    dropped: int
    depth: int


@dataclass(frozen=True)
class Balance:
    """The run's closing account over every trainer, in transitions; ``line`` states
    ``produced = consumed + dropped + in_flight``; ``lag``: policy lag -> chunks trained on;
    ``stuck``: actor GMIs that neither stopped nor died in time (their chunks are in flight)."""

    produced: int
    consumed: int
    dropped: int
    in_flight: int
    lag: dict[int, int]
    stuck: list[int]
    line: str

    def channels(self) -> dict:
        """:attr:`RunResult.channels`."""
        return {
            k: getattr(self, k) for k in ("produced", "consumed", "dropped", "in_flight", "lag")
        }


def actor_gone(route: Route) -> bool:
    """Whether the actor on ``route`` said it stopped or its process is gone (no pid published
    yet: still starting)."""
    if route.control(ACTOR_STATE) == STOPPED:
        return True
    pid = route.control(ACTOR_PID)
    return pid > 0 and not is_alive(pid)


class Accounting:
    """The counters of one trainer's ends, added up over the ``team``. Collective where it
    gathers: every trainer calls the same methods in the same order."""

    def __init__(
        self,
        links: TrainerLinks,
        collector: Collector,
        batcher: Batcher,
        ledger: Ledger,
        team: TrainerTeam | SoloTrainer,
    ):
        self.links, self.collector, self.batcher, self.ledger = links, collector, batcher, ledger
        self.team = team
        self.actors = sorted(links.routes)

    def produced(self) -> dict[int, int]:
        """Actor GMI -> transitions it sent this trainer (whole chunks only)."""
        return {a: r.control(PRODUCED_TRANSITIONS) for a, r in self.links.routes.items()}

    def counters(self) -> ChannelCounters:
        """The counters so far, over every trainer (collective)."""
        mine = self.produced()
        depth = self.collector.depth() + self.batcher.waiting()
        ledger = self.ledger
        row = [*(mine[a] for a in self.actors), ledger.consumed, ledger.dropped, depth]
        *produced, consumed, dropped, depth = self.team.gather(torch.tensor(row)).sum(0).tolist()
        return ChannelCounters(
            dict(zip(self.actors, produced, strict=True)), consumed, dropped, depth
        )

    def stop_actors(self, timeout_s: float) -> list[int]:
        """Tell the actors to stop and wait until each has stopped or died, taking chunks
        meanwhile; returns the actor GMIs that did neither within ``timeout_s``."""
        if self.links.board is not None:
            self.links.board.request_stop()
        deadline = time.monotonic() + timeout_s
        while True:
            waiting = [a for a, r in self.links.routes.items() if not actor_gone(r)]
            if not waiting or time.monotonic() > deadline:
                return waiting
            self.batcher.add(self.collector.poll())
            time.sleep(STOP_POLL_S)

    def settle(self, timeout_s: float = ACTORS_STOP_TIMEOUT_S) -> Balance:
        """Stop the actors, count every chunk still in the rings or held as in flight and balance
        the run (collective; ``ExactlyOnceError`` when it does not balance)."""
        stuck = self.stop_actors(timeout_s)
        if stuck:
            log.warning(
                "actor GMI(s) %s did not stop in time; their chunks count as in flight", stuck
            )
        self.batcher.add(self.collector.poll())
        self.batcher.drain()
        mine = torch.tensor([sum(self.produced().values()), *self.ledger.totals()])
        produced, consumed, dropped, in_flight = (int(n) for n in self.team.gather(mine).sum(0))
        line = balance_line(produced, consumed, dropped, in_flight)
        return Balance(produced, consumed, dropped, in_flight, self.lag_histogram(), stuck, line)

    def lag_histogram(self) -> dict[int, int]:
        """Policy lag -> chunks trained on, over every trainer (collective)."""
        mine = self.batcher.lag.histogram
        width = int(self.team.gather(torch.tensor([max(mine, default=-1) + 1])).max())
        counts = torch.zeros(width, dtype=torch.int64)
        for lag, n in mine.items():
            counts[lag] = n
        total = self.team.gather(counts).sum(0) if width else counts
        return {lag: int(n) for lag, n in enumerate(total.tolist()) if n}


def run_result(
    books: Bookkeeping,
    balance: Balance,
    stopped_by: int | None,
    checkpoint: str | None,
    rates: Rates | None,
) -> RunResult:
    """What the trainer returns: the books' rewards and frames, the ``balance``, the last
    throughput ``rates``; the run folder on the lead only."""
    agent = books.agent
    return RunResult(
        mean_reward=books.mean_reward,
        mean_length=books.mean_length,
        frames=int(agent.frame),
        experiment_dir=getattr(agent, "experiment_dir", None) if books.lead else None,
        history=books.history,
        stopped_by=stopped_by,
        ended_by=None if stopped_by is not None else books.ended_by,
        checkpoint=checkpoint,
        rates={} if rates is None else {"pps": rates.pps, "ttop": rates.ttop},
        channels=balance.channels(),
    )
