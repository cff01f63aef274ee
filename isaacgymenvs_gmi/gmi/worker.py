"""Entry of every GMI: bind this process to its slice of the node, join the other GMIs, and run
the body of the plan's mode.

:func:`gmi_main` serves both a GMI our launcher spawned and a rank ``torchrun`` started;
:func:`run_in_process` runs the same body in this process when the run has a single GMI. The body
is passed in (the launcher picks it by mode), so this layer knows no mode.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import tempfile
from datetime import timedelta
from typing import Any

from torch.distributed.elastic.multiprocessing.errors import record

from isaacgymenvs_gmi.placement.run_plan import RunPlan

from .binding import bind, unbound
from .context import Body, GmiContext
from .faults import epoch_hook

STARTUP_TIMEOUT_FACTOR = 10  # start-up (env building, compiling) may take this x gmi.timeout_s


def _die_with_parent() -> None:
    """Ask the kernel to kill this GMI if its launcher dies: no orphans, whatever happens."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def run_in_process(plan: RunPlan, body: Body) -> Any:
    """``body`` for a run of one GMI, in this process, unbound and without a group."""
    return body(GmiContext(plan=plan, resources=unbound(plan), before_epoch=epoch_hook(0)))


@record
def gmi_main(plan: RunPlan, body: Body) -> Any:
    """Body of one GMI process (rank and world size from torch.distributed's environment)."""
    import torch.distributed as dist

    _die_with_parent()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if world != plan.world_size:
        raise RuntimeError(f"launched {world} ranks but the layout has {plan.world_size} GMIs")
    resources = bind(plan, plan.layout.place(rank))
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING, format=f"[GMI {rank}] %(message)s"
    )
    timeout = plan.gmi.timeout_s
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    try:
        from .group import GmiGroup
        from .guard import CollectiveGuard
        from .status import say

        say(resources.describe(plan.gmi_backend))
        store = dist.TCPStore(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            is_master=False,
            timeout=timedelta(seconds=timeout),
        )
        guard = CollectiveGuard(store, rank, world, timeout)
        group = GmiGroup(rank, world, guard, store, STARTUP_TIMEOUT_FACTOR * timeout)
        with tempfile.TemporaryDirectory(prefix=f"gmi{rank}-") as scratch:
            context = GmiContext(plan, resources, group, scratch, epoch_hook(rank))
            return body(context)
    finally:
        dist.destroy_process_group()
