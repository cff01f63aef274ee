"""Spawn a run's GMIs on this node with torch.distributed's elastic launcher (torchrun's engine).

The GMIs are spawned (not forked: JAX is not fork-safe), rendezvous over c10d on the loopback
address, and are watched by the elastic agent: when one dies, the agent stops the others and the
launch fails with that GMI's error, which :func:`spawn_gmis` turns into a one-line report. An
MPS daemon the launch had to start is stopped whatever happens.
"""

from __future__ import annotations

import logging
import signal
import socket
import uuid
from typing import Any

from isaacgymenvs_gmi.placement.cpu_sets import oversubscribed, usable_cores
from isaacgymenvs_gmi.placement.run_plan import RunPlan

from .context import Body
from .mps import mps_daemon_for
from .worker import gmi_main

log = logging.getLogger(__name__)


class GmiFailure(RuntimeError):
    """A GMI failed; the message names it and its error."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _traceback_of(failure) -> str:
    message = failure.message
    if isinstance(message, dict):
        return str(message.get("extraInfo", {}).get("py_callstack", "")).strip()
    return ""


def describe_failure(err) -> str:
    """One line per failed GMI from an elastic ``ChildFailedError``."""
    lines = []
    for rank, failure in sorted(err.failures.items()):
        code = failure.exitcode
        if code < 0:
            try:
                what = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"killed by signal {-code}"
        else:
            message = failure.message
            if isinstance(message, dict):
                message = message.get("message", "")
            text = str(message or "").strip().splitlines()
            what = f"exited with code {code}" + (f": {text[-1]}" if text else "")
        lines.append(f"GMI {rank} (pid {failure.pid}) {what}")
    return "; ".join(lines) or str(err)


def spawn_gmis(plan: RunPlan, body: Body) -> Any:
    """Run ``body`` in every GMI of ``plan`` on this node and return GMI 0's result; raise
    GmiFailure naming the GMI when one fails."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    # The agent logs every worker's traceback at ERROR; our report below says it in one line.
    logging.getLogger("torch.distributed.elastic").setLevel(logging.CRITICAL)
    config = LaunchConfig(
        min_nodes=1,
        max_nodes=1,
        nproc_per_node=plan.layout.per_node,
        run_id=f"gmi-{uuid.uuid4().hex[:8]}",
        role="gmi",
        rdzv_backend="c10d",
        rdzv_endpoint=f"127.0.0.1:{_free_port()}",
        max_restarts=0,
        monitor_interval=0.2,
        start_method="spawn",
    )
    log.info("launching %s (%s backend)", plan.layout.describe(), plan.gmi_backend)
    layout, cores = plan.layout, usable_cores()
    if oversubscribed(cores, layout.devices_per_node, layout.per_device):
        log.warning(
            "%d GMIs on %d cores: GMIs share cores and contend instead of overlapping",
            layout.per_node,
            len(cores),
        )
    with mps_daemon_for(plan.gmi_backend):
        try:
            results = elastic_launch(config, gmi_main)(plan, body)
        except ChildFailedError as err:
            rank, first = err.get_first_failure()
            if _traceback_of(first):  # the root cause, once (the agent's own logs are muted)
                log.error("GMI %d failed first:\n%s", rank, _traceback_of(first))
            raise GmiFailure(describe_failure(err)) from None
    return results.get(0)
