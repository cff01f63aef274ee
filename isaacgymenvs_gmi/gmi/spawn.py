"""Spawn a run's GMIs on this node and watch them until they finish.

The launcher owns, and closes whatever happens: a private temp folder (scratch folders,
``TMPDIR``, the :mod:`.rendezvous`), a per-run secret handed to each GMI through the spawn pipe
(:class:`~isaacgymenvs_gmi.comm.signed_store.SignedStore`), the GMI processes (:mod:`.start_method`,
watched by :class:`~.supervise.Supervisor`) and any MPS daemon it started. GMI sockets use
loopback.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import os
import secrets
from multiprocessing import resource_tracker
from typing import Any

from isaacgymenvs_gmi.placement.cpu_sets import choose_cores, oversubscribed, usable_cores
from isaacgymenvs_gmi.placement.run_plan import RunPlan

from .context import Body
from .gmi_process import GmiProcess
from .mps import mps_daemon
from .rendezvous import make_rendezvous
from .scratch import private_temp_dir
from .start_method import start_method
from .stop import signals_to_catch, stop_signals_held
from .supervise import GmiFailure, GmiInterrupted, LauncherSignals, Supervisor
from .worker import SpawnedLaunch, loopback_sockets, spawned_gmi_main

log = logging.getLogger(__name__)
TEARDOWN_GRACE_S = 3.0  # after a failure, how long the other GMIs get to exit on their own

__all__ = ["GmiFailure", "GmiInterrupted", "spawn_gmis"]


def gmi_environment(scratch_root: str) -> dict[str, str]:
    """Variables every spawned GMI sets: loopback sockets (unless the user chose interfaces),
    ``TMPDIR`` in the run's private folder."""
    keys = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")
    chosen = {k: os.environ[k] for k in keys if os.environ.get(k)}
    return {**loopback_sockets(), **chosen, "TMPDIR": scratch_root}


def spawn_gmis(plan: RunPlan, body: Body) -> Any:
    """Run ``body`` in every GMI of ``plan`` on this node and return GMI 0's result.

    Raises:
        GmiFailure: a GMI failed (the message names every failed GMI and its error).
        GmiInterrupted: a stop signal ended the run before GMI 0 returned a result.
    """
    layout, cores = plan.layout, usable_cores()
    if oversubscribed(cores, layout.devices_per_node, layout.per_device):
        pinned = plan.terms.pinned
        chosen = choose_cores(plan.gmi.cores, crowded=True, some_pinned=bool(pinned))
        how = "each device's GMIs share its cores, every pool sized to its share"
        if chosen == "pinned":
            how = "some cores carry two GMIs"
            if pinned:
                how += f"; GMI(s) {list(pinned)} keep cores of their own"
        log.warning(
            "%d GMIs on %d cores: %s (gmi.cores=%s)", layout.per_node, len(cores), how, chosen
        )
    method, why = start_method(plan.gmi.start, plan.uses_gpu)
    log.info(
        "launching %s (%s backend; %s: %s)",
        layout.describe(),
        plan.gmi_backend,
        "forked" if method == "fork" else "spawned",
        why,
    )
    processes: list[GmiProcess] = []
    try:
        with (
            private_temp_dir() as scratch_root,
            mps_daemon() if plan.gmi_backend == "mps" else contextlib.nullcontext(),
            LauncherSignals(processes) as signals,
        ):
            launch = SpawnedLaunch(
                world_size=layout.per_node,
                rendezvous=make_rendezvous(scratch_root),
                secret=secrets.token_bytes(32),
                scratch_root=scratch_root,
                environ=gmi_environment(scratch_root),
                stop_signals=tuple(signals_to_catch()),
            )
            if method == "fork":
                resource_tracker.ensure_running()  # the GMIs share the launcher's
            context = mp.get_context(method)
            for rank in range(layout.per_node):
                receive, send = context.Pipe(duplex=False)
                process = context.Process(
                    target=spawned_gmi_main,
                    args=(plan, body, rank, launch, send),
                    name=f"gmi-{rank}",
                )
                with stop_signals_held():  # until the GMI has its own handlers
                    process.start()
                send.close()  # the GMI holds the only writing end: EOF when it dies
                processes.append(GmiProcess(rank, process, receive))
            return Supervisor(
                processes, signals, TEARDOWN_GRACE_S, plan.terms, stall_s=plan.gmi.timeout_s
            ).run()
    finally:
        for gmi in processes:
            gmi.kill()
