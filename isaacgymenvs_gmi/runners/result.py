"""What a run returns to its caller (GMI 0's view), whatever the mode."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunResult:
    mean_reward: float | None  # mean return of the episodes finished last (training or play)
    mean_length: float | None
    frames: int  # env steps of the whole run (every GMI), counted from the start of training
    experiment_dir: str | None  # the run folder (checkpoints, summaries), GMI 0 only
    history: list[tuple[int, float, float]] = field(default_factory=list)
    # (frame, wall time s, mean reward) per report, training only
    stopped_by: int | None = None  # the signal that ended training early (graceful stop)
    ended_by: str | None = None  # else the limit that ended it: "max_epochs", "max_frames",
    # "score_to_win" (None: not known)
    checkpoint: str | None = None  # the checkpoint GMI 0 wrote last
    rates: dict[str, float] = field(default_factory=dict)
    # throughput over the last window without warm-up, per second, all GMIs: "pps"
    # (predictions, async and serve), "ttop" (samples trained on, async)
    epoch_rates: list[float] = field(default_factory=list)
    # sync training: env steps/s of all GMIs in each epoch, over its wall time
    channels: dict = field(default_factory=dict)
    # async: transitions "produced", "consumed", "dropped", "in_flight"; "lag": policy lag ->
    # chunks trained on
