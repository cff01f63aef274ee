"""The start-up line: where the seconds before the first epoch went, from marks set on the way
(some in the launcher, inherited by GMIs through the environment)."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi import startup_clock


@pytest.fixture
def marks(monkeypatch):
    for name, _ in startup_clock.MARKS:
        monkeypatch.delenv(startup_clock.ENV_PREFIX + name.upper(), raising=False)

    def set_marks(**times: float) -> None:
        for name, when in times.items():
            startup_clock.mark(name, when)

    return set_marks


def test_every_phase_is_timed_from_its_marks(marks):
    marks(
        process=100.0,
        imports=103.0,
        config=103.5,
        gmi=105.0,
        env_begin=106.0,
        env_built=108.0,
        agent_built=108.5,
        first_epoch=110.0,
    )
    line = startup_clock.startup_line("XLA programs: 4 loaded from the compile cache, 0 compiled")
    assert line == (
        "start-up 10.0 s to the first epoch: imports 3.0 s, config and checks 0.5 s, "
        "GMI start 1.5 s, rl-games set-up 1.5 s, env build 2.0 s, first epoch 1.5 s; "
        "XLA programs: 4 loaded from the compile cache, 0 compiled"
    )


def test_missing_marks_leave_their_phases_out(marks):
    marks(config=50.0, gmi=51.0, first_epoch=54.0)  # a run started from Python, no launcher
    assert startup_clock.startup_line() == (
        "start-up 4.0 s to the first epoch: GMI start 1.0 s, first epoch 3.0 s"
    )


def test_no_line_before_the_first_epoch(marks):
    marks(process=1.0, imports=2.0)
    assert startup_clock.startup_line() is None
