"""A quiet console: library chatter dropped at our edge, library warnings said once per run,
and the lines a run says about itself (its progress timing, its closing line).

While :func:`quiet_console` is active, lines written to ``sys.stdout`` pass through a line
filter (rl-games' bare ``print`` of its set-up steps, once per GMI) and some library log records
are dropped (JAX's probe of plugins that are not installed, PyOpenGL's missing speed-ups); under
``torchrun`` only rank 0 logs below WARNING. Lines we do not know pass unchanged, each in a
single write, so GMIs sharing a terminal do not interleave half lines.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import shutil
import signal
import sys
from collections.abc import Iterator
from typing import Any

# rl-games' set-up and shut-down chatter (its own progress and results lines are kept)
NOISE = tuple(
    re.compile(p)
    for p in (
        r"^self\.seed = -?\d+$",
        r"^Started to (train|play)$",
        r"^WARNING: seq_len is deprecated, use seq_length instead$",
        r"^seq_length: \d+$",
        r"^current training device: ",
        r"^build mlp: \d+$",
        r"^RunningMeanStd: ",
        r"^torch\.compile: Disabled$",
        r"^MAX (EPOCHS|FRAMES) NUM!$",
        r"^global_rank = \d+ local_rank = \d+ world_size = \d+$",
        r"^Building (Actor|Critic|Critic Target)$",
        r"^Adding Central Value Network$",
        r"^\[BasePlayer\] Creating (regular env|vecenv): ",
        r"^\{'observation_space': ",  # the env_info dict the player prints
        r"^-?\d+(\.\d+)?(e[-+]?\d+)?$",  # the player's bare sum of rewards
        r"^av reward: ",  # the player's average, which our own summary line repeats
        r"^Exact experiment name requested from command line: ",
    )
)
# library warnings worth reading, but once per run: GMI 0 says them, the other GMIs do not
ONCE_PER_RUN = (re.compile(r"^WARNING: Max (epochs|frames) reached before any env terminated"),)
# library log records dropped: (logger, message)
DROPPED_LOGS = (
    # JAX's probe of accelerator plugins that are not installed
    ("jax._src.xla_bridge", re.compile(r"Unable to initialize backend '(tpu|rocm)'")),
    # JAX's compile cache switched off and on around a program compiled to be stored whole
    ("jax._src.compilation_cache", re.compile(r"^Resetting cache at ")),
    # PyOpenGL (imported for headless video) without its optional C speed-ups
    ("OpenGL.acceleratesupport", re.compile(r"^No OpenGL_accelerate module loaded")),
)


def keeps(line: str, rank: int) -> bool:
    """Whether the console shows ``line`` (without its newline) printed by GMI ``rank``."""
    text = line.rstrip("\r")
    if any(p.search(text) for p in NOISE):
        return False
    return rank == 0 or not any(p.search(text) for p in ONCE_PER_RUN)


class FilteredStdout(io.TextIOBase):
    """A text stream that forwards the lines :func:`keeps` allows to file descriptor ``fd``,
    each in one write; a partial line waits for its newline (or for :meth:`release`)."""

    def __init__(self, wrapped, rank: int):
        self.wrapped = wrapped
        self.rank = rank
        self._partial = ""

    def write(self, text: str) -> int:
        self._partial += text
        if "\n" in self._partial:
            *lines, self._partial = self._partial.split("\n")
            out = "".join(line + "\n" for line in lines if keeps(line, self.rank))
            if out:
                end_live()
                self.wrapped.flush()
                os.write(self.wrapped.fileno(), out.encode(errors="replace"))
        return len(text)

    def release(self) -> None:
        """Write out what is left of an unfinished line (if the filter keeps it)."""
        rest, self._partial = self._partial, ""
        if rest and keeps(rest, self.rank):
            end_live()
            self.wrapped.write(rest)
            self.wrapped.flush()

    def flush(self) -> None:
        self.wrapped.flush()

    def fileno(self) -> int:
        return self.wrapped.fileno()

    def isatty(self) -> bool:
        return self.wrapped.isatty()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.wrapped, "encoding", "utf-8")


class _RankZeroInfo(logging.Filter):
    """On a handler: rank 0 shows every record, other ranks WARNING and above; a record shown
    first ends an open progress line."""

    def __init__(self, rank: int):
        super().__init__()
        self.rank = rank

    def filter(self, record: logging.LogRecord) -> bool:
        if self.rank != 0 and record.levelno < logging.WARNING:
            return False
        end_live()
        return True


def launcher_rank() -> int:
    """This process's rank when a launcher started one process per rank (torchrun sets
    ``RANK``), else 0."""
    try:
        return int(os.environ.get("RANK", "0"))
    except ValueError:
        return 0


@contextlib.contextmanager
def quiet_console(rank: int | None = None) -> Iterator[None]:
    """Filter this process's stdout and the libraries' log chatter for the duration; nested uses
    and streams without a file descriptor (a test's captured stdout) are left as they are.
    ``rank``: the GMI this process runs (default: the launcher's rank, else 0)."""
    rank = launcher_rank() if rank is None else rank
    dropped = [
        (logging.getLogger(name), lambda record, p=p: not p.search(record.getMessage()))
        for name, p in DROPPED_LOGS
    ]
    ranked = [(h, _RankZeroInfo(rank)) for h in logging.getLogger().handlers]
    for owner, f in (*dropped, *ranked):
        owner.addFilter(f)
    stdout = sys.stdout
    try:
        stdout.fileno()
        wrap = not isinstance(stdout, FilteredStdout)
    except (AttributeError, OSError, ValueError):
        wrap = False
    filtered = FilteredStdout(stdout, rank) if wrap else None
    if filtered is not None:
        sys.stdout = filtered
    try:
        yield
    finally:
        if filtered is not None:
            filtered.release()
            if sys.stdout is filtered:
                sys.stdout = stdout
        for owner, f in (*dropped, *ranked):
            owner.removeFilter(f)


# --- what a run says about itself ---------------------------------------------------------------
ENDINGS = {
    "max_epochs": "max_epochs reached",
    "max_frames": "max_frames reached",
    "score_to_win": "score_to_win reached",
}


def clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on."""
    minutes, secs = divmod(int(max(seconds, 0.0) + 0.5), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def duration(seconds: float) -> str:
    """``12.3 s`` under a minute, else :func:`clock`."""
    return f"{seconds:.1f} s" if seconds < 59.95 else clock(seconds)


def timing(elapsed_s: float, eta_s: float | None) -> str:
    """``elapsed 1:05, ETA 2:10`` (no ETA where the run has no limit)."""
    eta = "" if eta_s is None else f", ETA {clock(eta_s)}"
    return f"elapsed {clock(elapsed_s)}{eta}"


def progress_bar(fraction: float, width: int = 20) -> str:
    """``[#####...............]  25%``."""
    fraction = min(max(fraction, 0.0), 1.0)
    filled = int(fraction * width)
    return f"[{'#' * filled}{'.' * (width - filled)}] {fraction * 100:3.0f}%"


def closing_line(result: Any, wall_s: float) -> str:
    """The run's last line: why it ended, its frames, wall time and final checkpoint (left out
    for a run without a run folder, e.g. serving)."""
    if result.stopped_by is not None:
        reason = f"stopped by {signal.Signals(result.stopped_by).name}"
    elif result.ended_by in ENDINGS:
        reason = f"training done: {ENDINGS[result.ended_by]}"
    else:
        reason = "done" if result.experiment_dir is None else "training done"
    line = f"{reason} after {result.frames:,} frames in {duration(wall_s)}"
    if result.checkpoint is not None or result.experiment_dir is not None:
        line += f"; final checkpoint: {result.checkpoint or 'none written'}"
    return line


# --- the progress line rewritten in place on a terminal -----------------------------------
_live_fd: int | None = None  # the descriptor whose progress line waits for its newline


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


def show_progress(line: str, stream, live: bool) -> None:
    """``line`` on ``stream``: in place of the previous one where ``live`` (a terminal, see
    :func:`show_live`), else as a line of its own."""
    if live:
        show_live(line, stream)
    else:
        stream.write(line + "\n")
        stream.flush()


def end_live() -> None:
    """Finish an open progress line, so that what is written next starts on a line of its own."""
    global _live_fd
    fd, _live_fd = _live_fd, None
    if fd is not None:
        with contextlib.suppress(OSError):
            os.write(fd, b"\n")
