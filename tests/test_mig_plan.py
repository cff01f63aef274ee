"""MIG planning prints the commands an administrator would run (it never runs them)."""

import subprocess
import sys

import pytest

from isaacgymenvs_gmi.mig import mig_setup_commands, profile_for


@pytest.mark.parametrize(
    "per_gpu,memory,expected",
    [
        (1, 80, "7g.80gb"),
        (2, 80, "3g.40gb"),
        (3, 80, "2g.20gb"),
        (4, 40, "1g.5gb"),
        (7, 80, "1g.10gb"),
        (3, 40, "2g.10gb"),
    ],
)
def test_profile_fits_the_card(per_gpu, memory, expected):
    assert profile_for(per_gpu, memory) == expected


def test_commands_and_cli():
    cmds = mig_setup_commands(3, [0, 1], 80)
    assert "nvidia-smi mig -i 1 -cgi 2g.20gb,2g.20gb,2g.20gb -C" in " ".join(cmds)
    out = subprocess.run(
        [sys.executable, "-m", "isaacgymenvs_gmi.mig", "plan", "--per-gpu", "2"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-cgi 3g.40gb,3g.40gb -C" in out
    bad = subprocess.run(
        [sys.executable, "-m", "isaacgymenvs_gmi.mig", "plan", "--per-gpu", "9"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "--per-gpu" in bad.stderr
