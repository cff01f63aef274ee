"""Status output of a GMI: single-write lines on the shared stdout, a progress line rewritten in
place on a terminal, and NVML device readings."""

from __future__ import annotations

import os
import sys

from isaacgymenvs_gmi.console import end_live, show_live

__all__ = ["end_live", "gpu_stats", "say", "show_live"]


def say(line: str) -> None:
    """One status line from a GMI in a single write (under PIPE_BUF bytes: never interleaved
    with another GMI's on the shared stdout)."""
    end_live()
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
