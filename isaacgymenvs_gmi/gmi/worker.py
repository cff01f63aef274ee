"""Entry of every GMI: bind this process to its slice of the node, join the other GMIs, and run
the body the launcher picked for the plan's mode: :func:`spawned_gmi_main` (spawned by
:mod:`.spawn`), :func:`gmi_main` (a ``torchrun`` rank), :func:`run_in_process` (a single GMI).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import sys
import tempfile
import threading
import traceback
from dataclasses import dataclass
from datetime import timedelta
from multiprocessing.connection import Connection
from typing import Any

from isaacgymenvs_gmi.comm.signed_store import SECRET_ENV, SignedStore, secret_from_hex
from isaacgymenvs_gmi.comm.store import Store
from isaacgymenvs_gmi.placement.run_plan import RunPlan

from .binding import bind, unbound
from .context import Body, GmiContext
from .faults import epoch_hook
from .rendezvous import open_rendezvous
from .scratch import private_temp_dir
from .stop import StopRequest, ignore_stop_signals, unblock_stop_signals

log = logging.getLogger(__name__)
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
STARTUP_TIMEOUT_FACTOR = 10  # start-up (env building, compiling) may take this x gmi.timeout_s


@dataclass(frozen=True)
class SpawnedLaunch:
    """What the launcher hands each GMI it spawns, through the spawn pipe."""

    world_size: int
    rendezvous: str  # the run's rendezvous folder (:mod:`.rendezvous`)
    secret: bytes  # signs what GMIs publish in the store
    scratch_root: str  # the run's private temp folder: each GMI's scratch folder goes inside
    environ: dict[str, str]  # set first (socket interfaces, ``TMPDIR``)
    stop_signals: tuple[int, ...]  # those the launcher catches (the GMI starts with them ignored)


def loopback_sockets() -> dict[str, str]:
    """Variables that make gloo and NCCL open their sockets on the loopback interface."""
    try:
        names = {name for _, name in socket.if_nameindex()}
    except OSError:
        return {}
    return {"GLOO_SOCKET_IFNAME": "lo", "NCCL_SOCKET_IFNAME": "lo"} if "lo" in names else {}


def die_with_parent(signum: int) -> None:
    """Ask the kernel to send this process ``signum`` when the thread that started it ends
    (Linux's parent-death signal; a no-op elsewhere)."""
    _prctl(1, signum)  # PR_SET_PDEATHSIG


def _prctl(option: int, value: int | bytes) -> None:
    """Linux's ``prctl``; a no-op where there is none."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(option, value)


def run_in_process(plan: RunPlan, body: Body) -> Any:
    """``body`` for a run of one GMI, in this process, unbound, without a group, temp files in a
    folder removed at the end. Training stops gracefully at the first stop signal (a second
    raises ``StopNow``); playing stops at once."""
    resources, hook = unbound(plan), epoch_hook(0)
    with private_temp_dir():
        if plan.test:
            return body(GmiContext(plan=plan, resources=resources, before_epoch=hook))
        with StopRequest(second_stops_now=True) as stop:
            context = GmiContext(
                plan=plan,
                resources=resources,
                before_epoch=hook,
                should_stop=lambda: stop.signum,
                stop_signal=lambda: stop.signum,
            )
            return body(context)


def spawned_gmi_main(
    plan: RunPlan, body: Body, rank: int, launch: SpawnedLaunch, results: Connection
) -> None:
    """Process entry of GMI ``rank`` spawned by :func:`.spawn.spawn_gmis`; sends
    ``("ok", result)`` (its body's result) or ``("error", line, traceback)`` on
    ``results`` and exits 0 or 1."""
    stop = StopRequest(second_stops_now=False, signals=launch.stop_signals).install()
    unblock_stop_signals()  # held back since the launcher started this process
    die_with_parent(signal.SIGKILL)  # no orphan GMI, whatever happens to its launcher
    _prctl(15, f"gmi-{rank}".encode()[:15])  # PR_SET_NAME: told from its launcher by ps, top
    for handler in list(logging.root.handlers):  # the launcher's to write
        logging.root.removeHandler(handler)
    os.environ.update(launch.environ)
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(launch.world_size))
    tempfile.tempdir = None  # re-read TMPDIR
    try:
        timeout = timedelta(seconds=plan.gmi.timeout_s)
        group_store, store = open_rendezvous(launch.rendezvous, launch.secret, timeout)
        scratch = os.path.join(launch.scratch_root, f"gmi{rank}")
        os.makedirs(scratch, mode=0o700)
        result = _join_and_run(
            plan, body, rank, launch.world_size, group_store, store, scratch, stop
        )
        results.send(("ok", result))  # GMI 0's is the run's (or the first survivor's)
    except BaseException as err:  # noqa: BLE001 - reported to the launcher, then exit 1
        line = f"{type(err).__name__}: {err}".strip().splitlines()
        results.send(("error", line[-1] if line else type(err).__name__, traceback.format_exc()))
        results.close()
        _reported()
        sys.exit(1)
    results.close()
    _reported()


def _reported() -> None:
    """This GMI has reported how it ended: a late Ctrl-C must not kill it, nor library threads
    dying at shutdown (tensorboardX's writer: "handle is closed") print tracebacks."""
    ignore_stop_signals()
    threading.excepthook = lambda args: None


def gmi_main(plan: RunPlan, body: Body) -> Any:
    """Body of one rank started by ``torchrun`` (rank, world and store from its environment)."""
    import torch.distributed as dist

    stop = StopRequest(second_stops_now=False).install()
    die_with_parent(signal.SIGKILL)  # no orphan GMI, whatever happens to its launcher
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    timeout = timedelta(seconds=plan.gmi.timeout_s)
    master = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    if master[0] in LOOPBACK_HOSTS:  # a rendezvous on loopback: every GMI is on this host
        for key, value in loopback_sockets().items():
            os.environ.setdefault(key, value)
    group_store = raw = dist.TCPStore(*master, None, False, timeout)
    store: Store = raw
    if os.environ.get(SECRET_ENV):
        store = SignedStore(raw, secret_from_hex(os.environ[SECRET_ENV]))
        group_store = dist.PrefixStore(store.namespace + "pg", raw)  # its keys unnamed too
    elif rank == 0:
        log.warning(
            "%s is not set: values in torchrun's store are not authenticated (set it to the "
            "same random hex string on every node)",
            SECRET_ENV,
        )
    with tempfile.TemporaryDirectory(prefix=f"gmi{rank}-") as scratch:
        return _join_and_run(plan, body, rank, world, group_store, store, scratch, stop)


def _join_and_run(
    plan: RunPlan,
    body: Body,
    rank: int,
    world: int,
    group_store: Any,
    store: Store,
    scratch: str,
    stop: StopRequest,
) -> Any:
    """Bind, join the process group over ``group_store`` (a torch store) and run ``body`` with
    a group whose own keys go through ``store``."""
    import torch.distributed as dist

    from isaacgymenvs_gmi.console import quiet_console
    from isaacgymenvs_gmi.tasks import import_task_modules

    import_task_modules(plan.task_modules)  # the user's tasks register themselves
    if world != plan.world_size:
        raise RuntimeError(f"launched {world} ranks but the layout has {plan.world_size} GMIs")
    resources = bind(plan, plan.layout.place(rank))
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING, format=f"[GMI {rank}] %(message)s"
    )
    timeout = plan.gmi.timeout_s
    dist.init_process_group(
        "gloo", store=group_store, rank=rank, world_size=world, timeout=timedelta(seconds=timeout)
    )
    try:
        from .group import GmiGroup
        from .guard import CollectiveGuard
        from .status import say

        say(resources.describe(plan.gmi_backend))
        debug = plan.gmi.debug
        if debug.active and rank == 0:
            say(debug.describe())
        after = None
        if debug.sync:
            from isaacgymenvs_gmi.sim.handoff import sync_devices as after
        guard = CollectiveGuard(store, rank, world, timeout, after=after)
        group = GmiGroup(
            rank, world, guard, store, STARTUP_TIMEOUT_FACTOR * timeout, threads=resources.threads
        )
        context = GmiContext(
            plan,
            resources,
            group,
            scratch,
            epoch_hook(rank),
            should_stop=lambda: group.agree_stop(stop.signum),
            stop_signal=lambda: stop.signum,
        )
        with quiet_console(rank):
            return body(context)
    finally:
        dist.destroy_process_group()
