"""Which jobs of a sweep stop early: Optuna's pruners decide, from every job's per-epoch mean
reward (``hydra.launcher.prune``).

Hydra's Optuna sweeper tells its study only a trial's final value, so its pruners never run.
The launcher keeps an in-memory study of its own, spanning the sweep's batches: one trial per
job, each epoch's mean reward (from the job's progress line) reported, and the pruner asked
after each report.

- ``median``: below the median of the finished jobs' rewards at that epoch (``MedianPruner``:
  after ``warmup_epochs``, once ``startup_jobs`` jobs have finished);
- ``halving``: ASHA (``SuccessiveHalvingPruner``): at epochs ``min_epochs * reduction_factor**k``
  a job goes on only within the top 1 / ``reduction_factor`` of the jobs that reached it;
- ``hyperband``: several halving brackets (``HyperbandPruner``), up to the jobs' epoch limit.
"""

from __future__ import annotations

import contextlib
import math
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PRUNERS = ("none", "median", "halving", "hyperband")


@dataclass(frozen=True)
class Pruned:
    """Why a job was stopped early."""

    epoch: int
    reward: float
    why: str  # "median of 3 jobs was 212.4", ...

    def text(self) -> str:
        return f"pruned at epoch {self.epoch} ({self.why})"


class SweepPruner:
    """An in-memory Optuna study over a sweep's jobs, with the pruner ``settings.prune`` names
    (:class:`~.settings.LauncherSettings`); ``max_epochs``: the jobs' epoch limit (Hyperband's
    largest resource)."""

    def __init__(self, settings: Any, max_epochs: int | None):
        import optuna

        self._optuna = optuna
        self.kind = settings.prune
        self.warmup = settings.warmup_epochs
        min_epochs = settings.min_epochs or max(settings.warmup_epochs, 1)
        factor = self.factor = settings.reduction_factor
        if self.kind == "median":
            pruner = optuna.pruners.MedianPruner(
                n_startup_trials=settings.startup_jobs, n_warmup_steps=settings.warmup_epochs
            )
        elif self.kind == "halving":
            pruner = optuna.pruners.SuccessiveHalvingPruner(
                min_resource=min_epochs, reduction_factor=factor
            )
        else:
            pruner = optuna.pruners.HyperbandPruner(
                min_resource=min_epochs,
                max_resource=max_epochs or "auto",
                reduction_factor=factor,
            )
        with self._quiet():
            self.study = optuna.create_study(direction="maximize", pruner=pruner)
        self._trials: dict[int, Any] = {}  # job index -> its Optuna trial

    @contextlib.contextmanager
    def _quiet(self) -> Iterator[None]:
        """Optuna's own lines about our study (created, trial finished or pruned) left out:
        the sweep says what happened; the user's Optuna sweeper keeps its verbosity."""
        logging = self._optuna.logging
        previous = logging.get_verbosity()
        logging.set_verbosity(logging.WARNING)
        try:
            yield
        finally:
            logging.set_verbosity(previous)

    def started(self, job: int) -> None:
        with self._quiet():
            self._trials[job] = self.study.ask()

    def report(self, job: int, epoch: int, reward: float) -> Pruned | None:
        """Job ``job``'s mean reward at ``epoch``; a :class:`Pruned` when it should stop."""
        trial = self._trials.get(job)
        if trial is None or not math.isfinite(reward):
            return None
        with self._quiet():
            trial.report(reward, epoch)
            if epoch <= self.warmup or not trial.should_prune():
                return None
        return Pruned(epoch, reward, self._why(epoch))

    def finished(self, job: int, value: float | None, pruned: bool) -> None:
        """Job ``job`` ended: pruned, or with ``value`` (None or NaN: it failed)."""
        trial = self._trials.pop(job, None)
        if trial is None:
            return
        states = self._optuna.trial.TrialState
        with self._quiet():
            if pruned:
                self.study.tell(trial, state=states.PRUNED)
            elif value is None or not math.isfinite(value):
                self.study.tell(trial, state=states.FAIL)
            else:
                self.study.tell(trial, value)

    def _why(self, epoch: int) -> str:
        """The comparison that stopped a job at ``epoch``, in words."""
        trials = self.study.get_trials(deepcopy=False)
        if self.kind == "median":
            done = self._optuna.trial.TrialState.COMPLETE
            values = [
                t.intermediate_values[epoch]
                for t in trials
                if t.state == done and epoch in t.intermediate_values
            ]
            if not values:
                return "below the finished jobs"
            jobs = "job" if len(values) == 1 else "jobs"
            return f"median of {len(values)} finished {jobs} was {statistics.median(values):.1f}"
        reached = [t.intermediate_values[epoch] for t in trials if epoch in t.intermediate_values]
        best = f", best {max(reached):.1f}" if reached else ""
        return (
            f"{self.kind}: not in the top 1/{self.factor} of the {len(reached)} jobs that "
            f"reached it{best}"
        )
