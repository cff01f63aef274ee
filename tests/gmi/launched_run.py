"""A ``train.py`` run started in the background, with its output read as it comes (each line
time-stamped), for tests that act on a run while it trains (signals, faults, forged keys)."""

from __future__ import annotations

import glob
import os
import sys
import threading
import time
from pathlib import Path

import psutil

from tests import warm_start
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[2]


class LaunchedRun:
    """``python train.py *args train_dir=<tmp>/runs`` with ``TMPDIR=<tmp>/temp`` or ``temp``
    (empty at start, so a test can check that the run leaves nothing in it), started as from a
    terminal (warm where it may: :mod:`tests.warm_start`): SIGHUP at its default even where the
    suite itself runs under ``nohup`` (which the run would inherit and, by design, respect)."""

    def __init__(
        self,
        tmp_path: Path,
        *args: str,
        env: dict | None = None,
        temp: Path | None = None,
        own_group: bool = False,
        cold: bool = False,
    ):
        self.runs, self.temp = tmp_path / "runs", temp or tmp_path / "temp"
        self.temp.mkdir(parents=True, exist_ok=temp is not None)
        self.lines: list[tuple[float, str, str]] = []  # (time, "out" | "err", line)
        self.proc = warm_start.start(
            [sys.executable, "train.py", *args, f"train_dir={self.runs}"],
            ROOT,
            {**os.environ, "TMPDIR": str(self.temp), **(env or {})},
            new_session=own_group,  # a process group of its own, as in a terminal
            cold=cold,  # a test of what a cold start does
        )
        self.seen_gmis: set[int] = set()
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, "err"), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, name: str) -> None:
        for line in stream:
            self.lines.append((time.monotonic(), name, line.rstrip("\n")))

    def text(self, name: str) -> str:
        return "\n".join(line for _, n, line in list(self.lines) if n == name)

    def wait_for(self, needle: str, timeout: float) -> float:
        """Time when a line containing ``needle`` appeared (waits for it up to ``timeout``
        seconds on the reference machine, stretched by :func:`tests.speed.budget`)."""
        timeout = budget(timeout)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for when, _, line in list(self.lines):
                if needle in line:
                    return when
            if self.proc.poll() is not None:
                time.sleep(0.5)  # let the readers drain
                for when, _, line in list(self.lines):
                    if needle in line:
                        return when
                raise AssertionError(f"run ended before {needle!r}:\n{self.text('err')[-3000:]}")
            time.sleep(0.1)
        raise AssertionError(f"no {needle!r} within {timeout} s:\n{self.text('err')[-3000:]}")

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the run's whole process group, as a terminal's Ctrl-C does (needs
        ``own_group=True``)."""
        os.killpg(self.proc.pid, sig)

    def gmi_pids(self) -> list[int]:
        """The launcher's GMI processes (its children named ``gmi-<rank>``, in GMI order); every
        descendant seen is checked to be gone by :meth:`leftovers`."""
        launcher = psutil.Process(self.proc.pid)
        self.seen_gmis.update(c.pid for c in launcher.children(recursive=True))
        gmis = {c.name(): c.pid for c in launcher.children() if c.name().startswith("gmi-")}
        return [gmis[name] for name in sorted(gmis, key=lambda n: int(n[4:]))]

    def finish(self, timeout: float) -> int:
        """The run's exit code; waits ``timeout`` seconds on the reference machine (stretched)."""
        try:
            code = self.proc.wait(timeout=budget(timeout))
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        for reader in self._readers:
            reader.join(5)
        return code

    def leftovers(self) -> list[str]:
        """What the run left in its temp dir, and live processes among those it started."""
        time.sleep(0.5)
        alive = [
            p
            for p in self.seen_gmis
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        return sorted(os.listdir(self.temp)) + [f"process {p}" for p in alive]

    def checkpoints(self) -> list[str]:
        return sorted(glob.glob(str(self.runs / "*" / "nn" / "*.pth")), key=os.path.getmtime)
