"""What the body of a mode receives: one shape for a single process, a launcher-started GMI and
a ``torchrun`` rank."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from isaacgymenvs_gmi.placement.run_plan import RunPlan

from .binding import GmiResources
from .faults import EpochHook, no_fault
from .stop import StopCheck, never_stop

if TYPE_CHECKING:
    from .group import GmiGroup


@dataclass(frozen=True)
class GmiContext:
    """One GMI's view of the run.

    Attributes:
        plan: the validated run, identical on every GMI.
        resources: cores and devices this GMI was given.
        group: the other GMIs, or None for a run in one process (no GMIs to talk to).
        scratch_dir: a private folder, removed at exit, for side files of this GMI (rl-games
            insists on a run folder; GMIs other than 0 write theirs here); None in one process.
        before_epoch: hook the body calls with each epoch about to start (fault injection).
        should_stop: called by the body at every epoch boundary (on every GMI, in step: with a
            group it is a collective); returns the stop signal the run received (then the body
            ends the run there, GMI 0 with a final checkpoint) or None to go on.
        stop_signal: the stop signal this process received, or None; no collective (for
            bodies whose GMIs do not move in step, e.g. async actors and trainers).
    """

    plan: RunPlan
    resources: GmiResources
    group: GmiGroup | None = None
    scratch_dir: str | None = None
    before_epoch: EpochHook = no_fault
    should_stop: StopCheck = never_stop
    stop_signal: StopCheck = never_stop

    @property
    def rank(self) -> int:
        return self.group.rank if self.group is not None else 0


Body = Callable[[GmiContext], Any]  # a mode's work in one GMI; GMI 0's return value is the run's
