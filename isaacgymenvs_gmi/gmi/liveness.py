"""Whether a process is running, stopped, a zombie or gone: the one place that reads
``/proc/<pid>/stat`` (split at its last ``)``: the command name may hold spaces and parentheses).
Where it cannot be read, ``os.kill(pid, 0)`` decides between running and gone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

ProcessState = Literal["running", "stopped", "zombie", "gone"]
PROC = Path("/proc")

_STATES: dict[int, ProcessState] = {
    **dict.fromkeys(b"Tt", "stopped"),  # stopped by a signal (T) or by a tracer (t)
    ord("Z"): "zombie",  # exited, not yet reaped by its parent
    **dict.fromkeys(b"Xx", "gone"),  # being reaped this instant
}


def process_state(pid: int, proc: Path = PROC) -> ProcessState:
    """``"running"`` (any state that can still run), ``"stopped"`` (``SIGSTOP`` or a tracer),
    ``"zombie"`` (exited, not reaped) or ``"gone"`` (also for a pid <= 0)."""
    if pid <= 0:
        return "gone"
    fields = stat_fields(pid, proc)
    if not fields:
        return _signal_probe(pid)
    return _STATES.get(fields[0][0], "running")


def stat_fields(pid: int, proc: Path = PROC) -> list[bytes] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state, ppid, pgrp, ...), or
    None where the file cannot be read or is not such a line."""
    try:
        stat = (proc / str(pid) / "stat").read_bytes()
    except OSError:
        return None
    _, paren, tail = stat.rpartition(b")")
    return tail.split() if paren else None


def is_alive(pid: int, proc: Path = PROC) -> bool:
    """``pid`` has not exited: running or stopped (a zombie has exited)."""
    return process_state(pid, proc) in ("running", "stopped")


def _signal_probe(pid: int) -> ProcessState:
    """Running or gone, from whether ``pid`` can be signalled (no state beyond that)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: too large to be a pid
        return "gone"
    except PermissionError:
        pass  # someone else's process: it exists
    return "running"
