"""Per-epoch throughput and device use across GMIs: gathered every epoch, shown by GMI 0.

Every GMI contributes its env steps/s; GMI 0 prints a progress line (rewritten in place on a
terminal), writes per-GMI and total env steps/s and, where NVML sees GPUs, their utilisation and
memory to TensorBoard. It takes numbers, not an agent.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import torch

from isaacgymenvs_gmi.gmi.status import gpu_stats

Gather = Callable[[torch.Tensor, str], torch.Tensor]  # (L,) -> (GMIs, L), GMI order


class EpochTelemetry:
    """``gather``: every GMI's vector, in GMI order (``GmiGroup.all_gather_vector``)."""

    def __init__(self, num_envs_per_gmi: int, horizon: int, rank: int, gather: Gather, stream=None):
        self.frames_per_epoch = num_envs_per_gmi * horizon
        self.rank, self.gather = rank, gather
        self.stream = stream or sys.stdout
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.history: list[dict] = []

    def record(
        self,
        *,
        epoch: int,
        max_epochs: int,
        epoch_seconds: float,
        reward: float | None,
        writer: Any = None,
    ) -> None:
        """After ``epoch`` (1-based) took ``epoch_seconds`` on this GMI; ``reward``: the mean
        episode reward over all GMIs (None before any episode ended); ``writer``: a TensorBoard
        SummaryWriter (GMI 0) or None."""
        mine = torch.tensor([self.frames_per_epoch / max(epoch_seconds, 1e-9)])
        per_gmi = self.gather(mine, "throughput").reshape(-1).tolist()
        if self.rank != 0:
            return
        total = sum(per_gmi)
        gpus = gpu_stats()
        frames = epoch * self.frames_per_epoch * len(per_gmi)
        row = {
            "epoch": epoch,
            "frames": frames,
            "env_steps_per_s": total,
            "per_gmi": per_gmi,
            "reward": reward,
            "wall_s": time.perf_counter() - self.start,
        }
        self.history.append(row)
        if writer is not None:
            writer.add_scalar("gmi/env_steps_per_s_total", total, frames)
            for i, v in enumerate(per_gmi):
                writer.add_scalar(f"gmi/env_steps_per_s_gmi{i}", v, frames)
            for index, util, mem in gpus:
                writer.add_scalar(f"gmi/gpu{index}_utilisation", util, frames)
                writer.add_scalar(f"gmi/gpu{index}_memory_gib", mem, frames)
        self._show(row, gpus, max_epochs)

    def _show(self, row: dict, gpus, max_epochs: int) -> None:
        reward = "-" if row["reward"] is None else f"{row['reward']:.1f}"
        per = " ".join(f"{v / 1e3:.1f}k" for v in row["per_gmi"])
        gpu = "".join(f" | GPU{i} {u:.0f}% {m:.1f}GiB" for i, u, m in gpus)
        line = (
            f"[GMI x{len(row['per_gmi'])}] epoch {row['epoch']}/{max_epochs} "
            f"frames {row['frames']:,} | {row['env_steps_per_s']:,.0f} env steps/s ({per}) "
            f"| mean reward {reward}{gpu}"
        )
        if self.live:
            self.stream.write("\r" + line[:200].ljust(200))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()
