"""Per-epoch throughput and device use across GMIs: gathered every epoch, shown by GMI 0.

Every GMI contributes its env steps/s; GMI 0 prints a progress line (rewritten in place on a
terminal), writes per-GMI and total env steps/s and, where NVML sees GPUs, their utilisation and
memory to TensorBoard.
"""

from __future__ import annotations

import logging
import os
import sys
import time

import torch

log = logging.getLogger(__name__)


def say(line: str) -> None:
    """One status line from a GMI, in a single write (GMIs share the launcher's stdout; one
    write of less than PIPE_BUF bytes is never interleaved with another process's)."""
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def gpu_stats() -> list[tuple[int, float, float]]:
    """(index, utilisation %, memory used GiB) of every GPU NVML sees; [] without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no library, no driver or no GPU
        return []
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            util = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
            used = pynvml.nvmlDeviceGetMemoryInfo(h).used / 2**30
            out.append((i, float(util), float(used)))
        return out
    finally:
        pynvml.nvmlShutdown()


class EpochTelemetry:
    def __init__(self, num_envs_per_gmi: int, horizon: int, stream=None):
        self.frames_per_epoch = num_envs_per_gmi * horizon
        self.stream = stream or sys.stdout
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.start = time.perf_counter()
        self.history: list[dict] = []

    def record(self, sync, agent, epoch_result) -> None:
        total_time = float(epoch_result[3])  # rl-games: step, play, update, total times
        mine = torch.tensor([self.frames_per_epoch / max(total_time, 1e-9)])
        per_gmi = sync.all_gather_vector(mine, "throughput").reshape(-1).tolist()
        if sync.rank != 0:
            return
        total = sum(per_gmi)
        gpus = gpu_stats()
        frames = agent.epoch_num * self.frames_per_epoch * sync.world_size
        meter = agent.game_rewards
        reward = float(meter.get_mean().reshape(-1)[0]) if meter.current_size else None
        row = {
            "epoch": agent.epoch_num,
            "frames": frames,
            "env_steps_per_s": total,
            "per_gmi": per_gmi,
            "reward": reward,
            "wall_s": time.perf_counter() - self.start,
        }
        self.history.append(row)
        writer = getattr(agent, "writer", None)
        if writer is not None:
            writer.add_scalar("gmi/env_steps_per_s_total", total, frames)
            for i, v in enumerate(per_gmi):
                writer.add_scalar(f"gmi/env_steps_per_s_gmi{i}", v, frames)
            for index, util, mem in gpus:
                writer.add_scalar(f"gmi/gpu{index}_utilisation", util, frames)
                writer.add_scalar(f"gmi/gpu{index}_memory_gib", mem, frames)
        self._show(row, gpus, agent.max_epochs)

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
