"""Status output of a GMI: single-write lines on the shared stdout, a progress line rewritten in
place on a terminal, and NVML device readings."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys

_live_fd: int | None = None  # the descriptor whose progress line waits for its newline


def say(line: str) -> None:
    """One status line from a GMI, in a single write (GMIs share the launcher's stdout; one
    write of less than PIPE_BUF bytes is never interleaved with another process's)."""
    end_live()
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def show_live(line: str, stream=None) -> None:
    """``line`` in place of the previous progress line on the terminal of ``stream`` (default:
    stdout), cut to the terminal's width; it stays open until :func:`end_live`."""
    global _live_fd
    stream = stream or sys.stdout
    width = max(shutil.get_terminal_size().columns - 1, 20)
    stream.flush()
    fd = stream.fileno()
    os.write(fd, ("\r" + line[:width] + "\x1b[K").encode(errors="replace"))
    _live_fd = fd


def end_live() -> None:
    """Finish an open progress line, so that what is written next starts on a line of its own."""
    global _live_fd
    fd, _live_fd = _live_fd, None
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, b"\n")


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
