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
    """One GMI's view of the run (``group``, ``scratch_dir``: None in a run of one process).

    ``scratch_dir``: a private folder removed at exit (rl-games' run folder for GMIs but 0).
    ``should_stop``: called at every epoch boundary, in step on every GMI (a collective with a
    group): the stop signal the run received (end there, GMI 0 checkpoints) or None.
    ``stop_signal``: this process's stop signal, no collective (GMIs not in step: async).
    """

    plan: RunPlan
    resources: GmiResources
    group: GmiGroup | None = None
    scratch_dir: str | None = None
    before_epoch: EpochHook = no_fault  # called with each epoch about to start (fault injection)
    should_stop: StopCheck = never_stop
    stop_signal: StopCheck = never_stop

    @property
    def rank(self) -> int:
        return self.group.rank if self.group is not None else 0


Body = Callable[[GmiContext], Any]  # a mode's work in one GMI; GMI 0's return value is the run's
