"""What a run returns to its caller (GMI 0's view), whatever the mode."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class RunResult:
    mean_reward: float | None  # mean return of the episodes finished last (training or play)
    mean_length: float | None
    frames: int  # env steps of the whole run (every GMI), counted from the start of training
    experiment_dir: str | None  # the run folder (checkpoints, summaries), GMI 0 only
    history: list[tuple[int, float, float]] = field(default_factory=list)
    # (frame, wall time s, mean reward) per report, training only
    stopped_by: int | None = None  # the signal that ended training early (graceful stop)
    ended_by: str | None = None  # else the limit that ended it ("max_epochs", ...; None: unknown)
    checkpoint: str | None = None  # the checkpoint GMI 0 wrote last
    rates: dict[str, float] = field(default_factory=dict)
    # per second over the last window after warm-up, all GMIs: "pps" (predictions), "ttop" (async)
    epoch_rates: list[float] = field(default_factory=list)
    # sync training: env steps/s of all GMIs in each epoch, over its wall time
    channels: dict = field(default_factory=dict)
    # async: transitions "produced", "consumed", "dropped", "in_flight"; "lag": lag -> chunks
    skipped_steps: int = 0  # optimizer steps the gradient scaler skipped (inf/NaN gradients)
    epoch_split: list[dict[str, list[float]]] = field(default_factory=list)
    # sync training: per epoch, stage (rl.epoch_work.STAGES) -> seconds on each GMI
    audits: list[dict] = field(default_factory=list)  # gmi.debug.audit's results (GMI 0)

    @classmethod
    def of_training(cls, observer: Any, lead: bool = True) -> RunResult:
        """A run of rl-games' agent (``observer.algo``, an ``EpisodeStatsObserver``'s): its
        statistics, frames, stop and limit; run folder and checkpoint where this GMI ``lead``s."""
        algo = observer.algo
        audit = getattr(algo, "audit", None)
        return cls(
            mean_reward=observer.mean_reward,
            mean_length=observer.mean_length,
            frames=int(getattr(algo, "frame", 0)),
            experiment_dir=getattr(algo, "experiment_dir", None) if lead else None,
            history=observer.history,
            stopped_by=getattr(algo, "stopped_by", None),
            ended_by=getattr(algo, "ended_by", None),
            checkpoint=getattr(algo, "last_checkpoint", None) if lead else None,
            skipped_steps=getattr(algo, "skipped_steps", 0),
            audits=[asdict(r) for r in audit.results] if audit is not None else [],
        )
