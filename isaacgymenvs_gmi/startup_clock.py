"""Where the seconds before the first epoch went: marks set along the way (in the launcher and
in GMI 0), turned into one line after the first epoch. Marks are wall-clock times kept in the
environment (``ISAACGYMENVS_GMI_STARTUP_<MARK>``), so spawned GMIs inherit them; phases whose
marks are missing (a run started from Python or by torchrun) are left out.
"""

from __future__ import annotations

import contextlib
import os
import time

ENV_PREFIX = "ISAACGYMENVS_GMI_STARTUP_"
# (mark that ends a phase, the phase's name), in order; the first mark starts the clock
MARKS = (
    ("process", None),
    ("imports", "imports"),
    ("config", "config and checks"),
    ("gmi", "GMI start"),
    ("env_begin", "rl-games set-up"),
    ("env_built", "env build"),
    ("agent_built", "rl-games set-up"),
    ("first_epoch", "first epoch"),
)


def process_start() -> float:
    """When this process started (wall clock)."""
    try:
        import psutil

        return psutil.Process().create_time()
    except Exception:  # noqa: BLE001 - no psutil or no /proc: now is the best we know
        return time.time()


def mark(name: str, when: float | None = None) -> None:
    """Record mark ``name`` now (or at ``when``)."""
    os.environ[ENV_PREFIX + name.upper()] = repr(time.time() if when is None else when)


def clear() -> None:
    for name, _ in MARKS:
        os.environ.pop(ENV_PREFIX + name.upper(), None)


def _marks() -> dict[str, float]:
    found = {}
    for name, _ in MARKS:
        with contextlib.suppress(TypeError, ValueError):  # not set, or not a number
            found[name] = float(os.environ.get(ENV_PREFIX + name.upper()))  # type: ignore[arg-type]
    return found


def startup_line(compile_note: str = "") -> str | None:
    """``start-up 9.8 s to the first epoch: imports 3.1 s, ...; <compile_note>``, or None
    before the first epoch."""
    marks = _marks()
    if "first_epoch" not in marks or len(marks) < 2:
        return None
    durations: dict[str, float] = {}
    previous = None
    for name, phase in MARKS:
        if name not in marks:
            continue
        if previous is not None and phase is not None:
            durations[phase] = durations.get(phase, 0.0) + max(marks[name] - marks[previous], 0)
        previous = name
    start = min(marks.values())
    parts = ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in durations.items())
    line = f"start-up {marks['first_epoch'] - start:.1f} s to the first epoch: {parts}"
    return f"{line}; {compile_note}" if compile_note else line
