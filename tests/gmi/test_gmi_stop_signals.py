"""Which signals stop a run gracefully: SIGINT, SIGTERM and SIGHUP (a closed terminal), the
last one left alone where the run was started to outlive its terminal (``nohup``)."""

from __future__ import annotations

import os
import signal

import pytest

from isaacgymenvs_gmi.gmi.stop import StopNow, StopRequest, exit_code, signals_to_catch


@pytest.fixture
def sighup_restored():
    previous = signal.getsignal(signal.SIGHUP)
    yield
    signal.signal(signal.SIGHUP, previous)


def test_a_hangup_is_a_graceful_stop_with_its_own_exit_code(sighup_restored):
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    assert signal.SIGHUP in signals_to_catch()
    with StopRequest(second_stops_now=True) as request:
        os.kill(os.getpid(), signal.SIGHUP)
        assert request.signum == signal.SIGHUP  # recorded, the process goes on
        with pytest.raises(StopNow):
            os.kill(os.getpid(), signal.SIGHUP)  # a second one stops at once
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL  # put back
    assert exit_code(signal.SIGHUP) == 129


def test_under_nohup_a_hangup_stays_ignored(sighup_restored):
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    assert signals_to_catch() == [signal.SIGINT, signal.SIGTERM]
    with StopRequest(second_stops_now=True) as request:
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)
        assert request.signum is None
