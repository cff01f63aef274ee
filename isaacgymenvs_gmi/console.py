"""A quiet console: library chatter dropped at our edge, library warnings said once per run.

rl-games prints its set-up steps with bare ``print`` (``self.seed = 42``, ``build mlp: 4``,
``MAX EPOCHS NUM!``, ...) once per GMI, and JAX logs a warning for every accelerator plugin it
cannot load (the TPU probe on every machine without one). None of it helps a user read their
run, so while :func:`quiet_console` is active, lines written to ``sys.stdout`` pass through a
line filter and the JAX probe warning is dropped from logging. The libraries' files are not
touched; lines we do not know pass unchanged, and whole lines go out in a single write, so the
GMIs sharing a terminal no longer interleave half lines.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import re
import sys
from collections.abc import Iterator

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
    )
)
# library warnings worth reading, but once per run: GMI 0 says them, the other GMIs do not
ONCE_PER_RUN = (re.compile(r"^WARNING: Max (epochs|frames) reached before any env terminated"),)
# JAX's probe of accelerator plugins that are not installed
_JAX_PROBE = re.compile(r"Unable to initialize backend '(tpu|rocm)'")
_JAX_LOGGER = "jax._src.xla_bridge"


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
                self.wrapped.flush()
                os.write(self.wrapped.fileno(), out.encode(errors="replace"))
        return len(text)

    def release(self) -> None:
        """Write out what is left of an unfinished line (if the filter keeps it)."""
        rest, self._partial = self._partial, ""
        if rest and keeps(rest, self.rank):
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


class _DropJaxProbe(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _JAX_PROBE.search(record.getMessage())


@contextlib.contextmanager
def quiet_console(rank: int = 0) -> Iterator[None]:
    """Filter this process's stdout and JAX's probe warning for the duration; nested uses and
    streams without a file descriptor (a test's captured stdout) are left as they are."""
    logger = logging.getLogger(_JAX_LOGGER)
    probe_filter = _DropJaxProbe()
    logger.addFilter(probe_filter)
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
        logger.removeFilter(probe_filter)
