"""The closing error line names the cause first (real processes): a GMI killed from outside or
stopped by a signal comes before the GMIs whose collectives timed out because of it, whatever
their ranks; among causes, the one seen first leads."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal

from isaacgymenvs_gmi.gmi.gmi_process import GmiProcess, causes_first, failure_text

CTX = mp.get_context("fork")


def _report(send, message) -> None:
    send.send(message)
    send.close()
    os._exit(1)


def _sleep_forever() -> None:
    signal.pause()


def _gmi(rank: int, target, *args) -> GmiProcess:
    receive, send = CTX.Pipe(duplex=False)
    process = CTX.Process(target=target, args=(send, *args) if args else ())  # args: a report
    process.start()
    send.close()
    return GmiProcess(rank, process, receive)


def _timeout_error(rank: int, missing: int) -> tuple:
    line = f"GmiTimeoutError: GMI {rank}: collective #9 (grads) failed; missing: GMI {missing}"
    return ("error", line, "Traceback ...")


def test_a_killed_gmi_leads_the_peers_that_timed_out_because_of_it():
    peer = _gmi(0, _report, _timeout_error(0, 2))
    killed = _gmi(2, _sleep_forever)
    os.kill(killed.process.pid, signal.SIGKILL)
    for gmi in (peer, killed):
        gmi.process.join(10)
        gmi.read()
    peer.failed_at, killed.failed_at = 1.0, 2.0  # the peer's error even arrived first
    assert [g.rank for g in causes_first([peer, killed])] == [2, 0]
    text = failure_text([peer, killed])
    assert text.startswith(f"GMI 2 (pid {killed.process.pid}) killed by SIGKILL; GMI 0"), text


def test_a_stopped_gmi_killed_by_the_launcher_is_a_cause_named_as_stopped():
    stopped, bystander = _gmi(1, _sleep_forever), _gmi(2, _sleep_forever)
    os.kill(stopped.process.pid, signal.SIGSTOP)
    stopped.kill("stopped by a signal (SIGSTOP or a debugger)")
    bystander.kill()  # torn down by the launcher: not a cause
    for gmi in (stopped, bystander):
        gmi.read()
        gmi.failed_at = 1.0
    text = failure_text([stopped, bystander])
    assert text == (
        f"GMI 1 (pid {stopped.process.pid}) stopped by a signal (SIGSTOP or a debugger): "
        "killed (the launcher stopped GMI 2)"
    ), text


def test_among_causes_the_one_seen_first_leads():
    first, second = _gmi(3, _sleep_forever), _gmi(1, _sleep_forever)
    for gmi in (first, second):
        os.kill(gmi.process.pid, signal.SIGKILL)
        gmi.process.join(10)
    first.failed_at, second.failed_at = 1.0, 1.5
    assert [g.rank for g in causes_first([second, first])] == [3, 1]
