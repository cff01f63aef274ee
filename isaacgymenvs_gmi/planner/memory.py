"""Memory a trial run holds: the resident memory of its processes on the CPU, device memory on a
GPU. A trial runs in its own process group (its launcher and the GMIs it spawns), so "its
processes" are the members of that group."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from isaacgymenvs_gmi.gmi.liveness import stat_fields

MIB = 2**20


def group_members(pgid: int, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the live processes in process group ``pgid``."""
    out = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        fields = stat_fields(int(entry.name), proc)  # state, ppid, pgrp, ...; None: gone
        if fields and len(fields) > 2 and int(fields[2]) == pgid:
            out.append(int(entry.name))
    return out


def process_memory_mb(pid: int) -> float:
    """Proportional set size of ``pid`` in MiB (shared pages split among their users; resident
    size where the kernel gives no PSS); 0 for a process that is gone."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024 / MIB
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return 0.0
    return pages * os.sysconf("SC_PAGE_SIZE") / MIB


def host_sampler(pgid: int) -> Callable[[], float]:
    """MiB the processes of group ``pgid`` hold now."""

    def sample() -> float:
        return sum(process_memory_mb(pid) for pid in group_members(pgid))

    return sample


def device_sampler(index: int) -> Callable[[], float]:
    """MiB of GPU ``index`` (NVML index) in use beyond what was used when the sampler was made:
    the trial's device memory, as nothing else runs on the device while the planner searches
    (MPS clients' memory is not always reported per process)."""
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
            return (
                pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).total / MIB
            )
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no library, driver or device
        return 0.0
