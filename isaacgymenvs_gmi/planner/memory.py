"""Memory a trial run holds: the resident memory of its process group (its launcher and GMIs) on
the CPU, device memory on a GPU."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from isaacgymenvs_gmi.gmi.liveness import stat_fields

MIB = 2**20


def group_members(pgid: int, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the live processes in process group ``pgid``."""
    pids = [int(entry.name) for entry in proc.iterdir() if entry.name.isdigit()]
    stats = ((pid, stat_fields(pid, proc)) for pid in pids)  # state, ppid, pgrp, ...; None: gone
    return [pid for pid, fields in stats if fields and len(fields) > 2 and int(fields[2]) == pgid]


def process_memory_mb(pid: int) -> float:
    """Proportional set size of ``pid`` in MiB (shared pages split among their users; resident
    size where the kernel gives no PSS); 0 for a process that is gone."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024 / MIB
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / MIB


def host_sampler(pgid: int) -> Callable[[], float]:
    """MiB the processes of group ``pgid`` hold now."""
    return lambda: sum(process_memory_mb(pid) for pid in group_members(pgid))


def device_sampler(index: int) -> Callable[[], float]:
    """MiB of GPU ``index`` (NVML index) in use beyond what was used when the sampler was made:
    nothing else runs there while the planner searches, and MPS clients' memory is not always
    reported per process."""
    import pynvml

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(index)
    base = pynvml.nvmlDeviceGetMemoryInfo(handle).used

    def sample() -> float:
        return max(0, pynvml.nvmlDeviceGetMemoryInfo(handle).used - base) / MIB

    return sample


def device_memory_mb(index: int) -> float:
    """Total memory of GPU ``index`` in MiB (0 without NVML)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)
            return pynvml.nvmlDeviceGetMemoryInfo(handle).total / MIB
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no library, driver or device
        return 0.0
