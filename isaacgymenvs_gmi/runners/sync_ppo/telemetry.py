"""Per-epoch throughput, pace and device use across GMIs: gathered every epoch, shown by GMI 0.

Every GMI contributes its env steps/s and its :class:`~isaacgymenvs_gmi.rl.epoch_work.EpochWork`;
GMI 0 prints the progress line (in place with a bar on a terminal) and writes per-GMI and total
rates, skipped steps, stage seconds and GPU use to TensorBoard; every ``SPLIT_EVERY`` epochs it
says where the slowest GMI's epoch went.
"""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import torch

from isaacgymenvs_gmi.console import progress_bar, show_progress, timing
from isaacgymenvs_gmi.gmi.status import end_live, gpu_stats
from isaacgymenvs_gmi.rl.epoch_work import STAGES, EpochWork, skipped_text

Gather = Callable[[torch.Tensor, str], torch.Tensor]  # (L,) -> (GMIs, L), GMI order
PACE_WINDOW = 10  # recent epochs the ETA's pace is measured over
SPLIT_EVERY = 10  # epochs between the lines that say where an epoch's time went


def gather_one(x: torch.Tensor, what: str) -> torch.Tensor:
    """The :data:`Gather` of a run of one GMI."""
    return x.detach().cpu().unsqueeze(0)


class EpochTelemetry:
    """``gather``: every GMI's vector, in GMI order (``GmiGroup.all_gather_vector``, or
    :func:`gather_one`); ``clock``: seconds, for elapsed time and the ETA."""

    def __init__(
        self,
        num_envs_per_gmi: int,
        horizon: int,
        rank: int,
        gather: Gather,
        stream=None,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.frames_per_epoch = num_envs_per_gmi * horizon
        self.rank, self.gather = rank, gather
        self.stream = stream or sys.stdout
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.clock = clock
        self.start = clock()
        self.history: list[dict] = []
        self._ends: deque[float] = deque(maxlen=PACE_WINDOW + 1)  # clock at recent epoch ends

    def record(
        self,
        *,
        epoch: int,
        max_epochs: int,
        epoch_seconds: float,
        reward: float | None,
        writer: Any = None,
        frames: int | None = None,
        max_frames: int = -1,
        work: EpochWork | None = None,
    ) -> None:
        """After ``epoch`` (1-based) took ``epoch_seconds`` on this GMI; ``reward``: the mean
        over all GMIs (None before any episode ended); ``frames``: the run's env steps after
        this epoch (default: counted from epoch 1); limits -1 for none."""
        rate = self.frames_per_epoch / max(epoch_seconds, 1e-9)
        mine = torch.tensor([rate, *(work or EpochWork()).vector()], dtype=torch.float64)
        rows = self.gather(mine, "throughput").reshape(-1, mine.numel())  # (GMIs, 4 + stages)
        if self.rank != 0:
            return
        per_gmi = rows[:, 0].tolist()
        updates, skipped = int(rows[0, 1]), int(rows[:, 2].max())  # skips agree in lockstep
        collectives = int(rows[0, 3])  # every GMI takes part in the same ones
        stages = {name: rows[:, 4 + i].tolist() for i, name in enumerate(STAGES)}
        now = self.clock()
        self._ends.append(now)
        total = sum(per_gmi)
        gpus = gpu_stats()
        per_epoch = self.frames_per_epoch * len(per_gmi)
        if frames is None:
            frames = epoch * per_epoch
        left = _epochs_left(epoch, max_epochs, frames, max_frames, per_epoch)
        row = {
            "epoch": epoch,
            "frames": frames,
            "env_steps_per_s": total,
            "per_gmi": per_gmi,
            "reward": reward,
            "wall_s": now - self.start,
            "eta_s": None if left is None else left * self._pace(epoch_seconds),
            "updates": updates,
            "skipped": skipped,
            "collectives": collectives,
            "stages": stages,  # name -> seconds per GMI
        }
        self.history.append(row)
        if writer is not None:
            writer.add_scalar("gmi/env_steps_per_s_total", total, frames)
            writer.add_scalar("gmi/skipped_steps", skipped, frames)
            for i, v in enumerate(per_gmi):
                writer.add_scalar(f"gmi/env_steps_per_s_gmi{i}", v, frames)
                for name, seconds in stages.items():
                    writer.add_scalar(f"gmi/stage_{name}_s_gmi{i}", seconds[i], frames)
            for index, util, mem in gpus:
                writer.add_scalar(f"gmi/gpu{index}_utilisation", util, frames)
                writer.add_scalar(f"gmi/gpu{index}_memory_gib", mem, frames)
        done = None if left is None else epoch / max(epoch + left, 1)
        line = progress_line(row, gpus, max_epochs, done if self.live else None)
        show_progress(line, self.stream, self.live)
        if work is not None and (epoch == 1 or epoch % SPLIT_EVERY == 0):
            if self.live:
                end_live()
            self.stream.write(split_line(epoch, stages, collectives) + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End the progress line left open on a terminal (call once training ends)."""
        if self.live:
            end_live()

    def _pace(self, epoch_seconds: float) -> float:
        """Seconds per epoch: the wall time between recent epoch ends, or this epoch's own at the
        first."""
        if len(self._ends) < 2:
            return epoch_seconds
        return (self._ends[-1] - self._ends[0]) / (len(self._ends) - 1)


def progress_line(row: dict, gpus, max_epochs: int, bar: float | None = None) -> str:
    """``[GMI xN] epoch e/E frames F | S env steps/s (per GMI) | mean reward R | elapsed, ETA``;
    ``bar``: the fraction done, shown as a progress bar after the GMI count."""
    n = len(row["per_gmi"])
    reward = "-" if row["reward"] is None else f"{row['reward']:.1f}"
    per = " (" + " ".join(f"{v / 1e3:.1f}k" for v in row["per_gmi"]) + ")" if n > 1 else ""
    gpu = "".join(f" | GPU{i} {u:.0f}% {m:.1f}GiB" for i, u, m in gpus)
    epochs = f"{row['epoch']}/{max_epochs}" if max_epochs > 0 else str(row["epoch"])
    shown = "" if bar is None else progress_bar(bar) + " "
    skips = skipped_text(row.get("updates", 0), row.get("skipped", 0))
    return (
        f"[GMI x{n}] {shown}epoch {epochs} frames {row['frames']:,} | "
        f"{row['env_steps_per_s']:,.0f} env steps/s{per} | mean reward {reward} | "
        f"{timing(row['wall_s'], row['eta_s'])}{gpu}{skips}"
    )


def split_line(epoch: int, stages: dict[str, list[float]], collectives: int = 0) -> str:
    """Where epoch ``epoch`` went on its slowest GMI: ``epoch split ...: env_step 0.41 s, ...``
    (``stages``: name -> seconds per GMI; ``collectives``: how many the epoch had)."""
    totals = [sum(per) for per in zip(*stages.values(), strict=True)]
    slowest = max(range(len(totals)), key=totals.__getitem__)
    parts = ", ".join(f"{name} {per[slowest]:.3f}" for name, per in stages.items())
    who = f"GMI {slowest}, the slowest" if len(totals) > 1 else "GMI 0"
    count = f" ({collectives} collectives)" if collectives else ""
    return f"epoch {epoch} split ({who}), seconds: {parts}{count}"


def _epochs_left(
    epoch: int, max_epochs: int, frames: int, max_frames: int, per_epoch: int
) -> int | None:
    """Epochs until the first limit ends the run (None: no limit)."""
    left = []
    if max_epochs > 0:
        left.append(max(max_epochs - epoch, 0))
    if max_frames > 0:
        left.append(max(math.ceil((max_frames - frames) / max(per_epoch, 1)), 0))
    return min(left) if left else None
