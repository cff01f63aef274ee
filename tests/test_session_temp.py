"""The suite leaves nothing in the temp dir, and still fails for what its runs leave: a session
of two probe tests run on an empty ``TMPDIR``, on a machine that never compiled."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.session_temp_probe import PLANTED
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[1]


def test_a_session_leaves_an_empty_temp_dir_empty_and_fails_for_a_leftover(tmp_path):
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTEST_DEBUG_TEMPROOT": str(tmp_path)}
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)  # as on a new machine: torch picks its own folder
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/session_temp_probe.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(120),
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert "2 passed" in out, out[-3000:]
    left = [line for line in out.splitlines() if line.startswith("left behind")]
    assert len(left) == 1 and PLANTED in left[0] and "torchinductor" not in left[0], out[-3000:]
    assert proc.returncode == 1, out[-3000:]  # the planted folder fails the session
    assert not list(temp.iterdir()), "the session left its temp dir behind"
