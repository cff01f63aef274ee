"""What an rl-games learner's epoch did besides its losses: the optimizer steps it asked for,
those its gradient scaler skipped (inf/NaN gradients: replicas that all skip stay finite but do
not learn), and where its wall time went, in stages (seconds on the host clock):

- ``env_step``: the physics, rewards and resets (rl-games' env step, hand-offs left out);
- ``handoff``: buffers crossing between torch and JAX (actions in, step outputs out);
- ``inference``: the policy choosing actions during play;
- ``update``: GAE, the dataset and the minibatch updates, collectives left out;
- ``collectives``: waiting in exchanges with the other GMIs;
- ``other``: the rest (rl-games' bookkeeping between steps, statistics, the epoch's end).

On a GPU a stage is charged when the host waits for its queued work; ``gmi.debug.sync=true``
makes the host wait at every env step and collective, charging the device's time where spent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

STAGES = ("env_step", "handoff", "inference", "update", "collectives", "other")
OVER_HALF = 0.5  # a skip fraction above this is named in the progress line


@dataclass(frozen=True)
class EpochWork:
    updates: int = 0  # optimizer steps asked for (one per minibatch)
    skipped: int = 0  # of them, skipped by the gradient scaler (inf or NaN gradients)
    stages: dict[str, float] = field(default_factory=dict)  # STAGES name -> seconds
    collectives: int = 0  # exchanges with the other GMIs

    def vector(self) -> list[float]:
        """``[updates, skipped, collectives, *seconds in STAGES order]``, for gathering."""
        counts = (self.updates, self.skipped, self.collectives)
        return [*map(float, counts), *(self.stages.get(s, 0.0) for s in STAGES)]


def skipped_text(updates: int, skipped: int) -> str:
    """`` | k of n steps skipped`` for the progress line ('' without skips); above half, why."""
    if not skipped:
        return ""
    text = f" | {skipped} of {updates} steps skipped"
    if updates and skipped / updates > OVER_HALF:
        text += " (over half: inf/NaN gradients, the policy barely learns)"
    return text


def optimizer_steps(optimizer: Any) -> int | None:
    """Steps ``optimizer`` has taken, from its per-parameter ``step`` state (Adam's; 0 before
    the first), or None for an optimizer that keeps no count."""
    if not optimizer.state:
        return 0
    return next((int(s["step"]) for s in optimizer.state.values() if "step" in s), None)


class EpochMeter:
    """Counts one learner's steps and stage seconds between :meth:`start` and :meth:`finish`:
    what it times itself (:meth:`add`), and cumulative clocks kept elsewhere (the env's hand-off
    seconds, a group's collective seconds and count) read at both ends."""

    def __init__(self):
        self.updates = 0  # optimizer steps asked for, over the whole run
        self.skipped_total = 0
        self._own: dict[str, float] = {}
        self._start_wall = 0.0
        self._start: tuple[int, int | None, float, float] = (0, 0, 0.0, 0.0)

    def start(
        self, steps_taken: int | None, handoff_s: float, collective_s: float, collectives: int = 0
    ) -> None:
        self._own = {}
        self._start_wall = time.perf_counter()
        self._start = (self.updates, steps_taken, handoff_s, collective_s, collectives)

    def add(self, stage: str, seconds: float) -> None:
        self._own[stage] = self._own.get(stage, 0.0) + seconds

    def finish(
        self,
        steps_taken: int | None,
        handoff_s: float,
        collective_s: float,
        step_time: float,
        update_time: float,
        collective_in_update_s: float,
        collectives: int = 0,
    ) -> EpochWork:
        """The epoch since :meth:`start`: ``step_time``/``update_time`` as rl-games measured
        them (its env steps, its update phase); ``collective_in_update_s``: the cumulative
        collective clock as the update phase ended; ``collectives``: the cumulative count."""
        updates0, steps0, handoff0, collective0, count0 = self._start
        updates = self.updates - updates0
        skipped = 0
        if steps_taken is not None and steps0 is not None:
            skipped = max(updates - (steps_taken - steps0), 0)
        self.skipped_total += skipped
        handoff = handoff_s - handoff0
        in_update = collective_in_update_s - collective0
        stages = {
            "env_step": max(step_time - handoff, 0.0),
            "handoff": handoff,
            "inference": self._own.get("inference", 0.0),
            "update": max(update_time - in_update, 0.0),
            "collectives": collective_s - collective0,
        }
        wall = time.perf_counter() - self._start_wall
        stages["other"] = max(wall - sum(stages.values()), 0.0)
        return EpochWork(updates, skipped, stages, collectives - count0)
