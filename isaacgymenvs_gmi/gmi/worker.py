"""One GMI: bind this process to its slice of the node, join the other GMIs, train.

Entry point of every GMI process, whether our launcher or ``torchrun`` started it. Resources are
bound before the simulator, JAX or CUDA start: the CPU affinity (its own core set), thread pools
sized to it (torch, OpenMP, XLA; MuJoCo's pool follows the affinity), and on a GPU the device,
MPS thread percentage and a JAX memory share.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import tempfile
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from torch.distributed.elastic.multiprocessing.errors import record

from isaacgymenvs_gmi.plan import RunPlan

from .backends import sm_percent
from .cpu_sets import split_cores, usable_cores
from .layout import GmiPlace

log = logging.getLogger(__name__)
FAULT_ENV = "ISAACGYMENVS_GMI_FAULT"  # testing aid, "<gmi id>:<crash|hang>:<epoch>"


@dataclass(frozen=True)
class GmiResources:
    """What one GMI was given."""

    place: GmiPlace
    cores: tuple[int, ...]
    sim_device: str
    rl_device: str
    sm_percent: float | None  # MPS share of the GPU's SMs
    memory_fraction: float | None  # share of device memory JAX may take

    def describe(self, backend: str) -> str:
        p = self.place
        share = "" if self.sm_percent is None else f", {self.sm_percent:g}% of SMs"
        mem = "" if self.memory_fraction is None else f", {self.memory_fraction:.0%} of memory"
        return (
            f"GMI {p.gmi_id}: node {p.node}, device {p.device} slot {p.slot}"
            f"{' (leader)' if p.is_leader else ''}, backend {backend}{share}{mem}, "
            f"cores {list(self.cores)}, sim {self.sim_device}, learner {self.rl_device}"
        )


def _die_with_parent() -> None:
    """Ask the kernel to kill this GMI if its launcher dies: no orphans, whatever happens."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def bind(plan: RunPlan, place: GmiPlace) -> GmiResources:
    """Pin this process and size its pools; set the device environment before CUDA/JAX start."""
    layout = plan.layout
    cores = split_cores(usable_cores(), layout.devices_per_node, layout.per_device)[
        place.local_rank
    ]
    os.sched_setaffinity(0, cores)
    n = len(cores)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(n)
    eigen = "true" if n > 1 else "false"
    xla = f"--xla_cpu_multi_thread_eigen={eigen} intra_op_parallelism_threads={n}"
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + xla).strip()
    import torch

    torch.set_num_threads(n)
    sim_device = rl_device = "cpu"
    share = fraction = None
    if plan.gmi_backend in ("mps", "mig", "direct"):
        os.environ["CUDA_VISIBLE_DEVICES"] = _visible_device(plan, place)
        fraction = round(0.9 / layout.per_device, 3)
        os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
        os.environ["XLA_PYTHON_CLIENT_MEM_FRACTION"] = str(fraction)
        if plan.gmi_backend == "mps":
            share = sm_percent(plan.gmi, place.slot)
            os.environ["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = f"{share:g}"
        sim_device = rl_device = "cuda:0"  # the only device this process sees
    return GmiResources(place, tuple(cores), sim_device, rl_device, share, fraction)


def _visible_device(plan: RunPlan, place: GmiPlace) -> str:
    from .inventory import detect_inventory

    gpu = detect_inventory().gpus[place.local_device]
    if plan.gmi_backend == "mig":
        return gpu.mig_instances[place.slot].uuid
    return str(gpu.index)


def inject_fault(rank: int, epoch: int) -> None:
    """Testing aid: crash or hang GMI ``rank`` at ``epoch`` when FAULT_ENV asks for it."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    who, kind, when = spec.split(":")
    if int(who) == rank and int(when) == epoch:
        log.warning("GMI %d: injected %s at epoch %d", rank, kind, epoch)
        if kind == "crash":
            raise RuntimeError(f"injected crash in GMI {rank}")
        signal.pause()  # hang: wait for a signal that never comes


@record
def gmi_main(cfg: dict[str, Any], plan: RunPlan):
    """Body of one GMI process (ranks from torch.distributed's environment)."""
    import torch.distributed as dist

    _die_with_parent()
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if world != plan.world_size:
        raise RuntimeError(f"launched {world} ranks but the layout has {plan.world_size} GMIs")
    place = plan.layout.place(rank)
    resources = bind(plan, place)
    logging.basicConfig(
        level=logging.INFO if rank == 0 else logging.WARNING, format=f"[GMI {rank}] %(message)s"
    )
    timeout = plan.gmi.timeout_s
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    try:
        from .telemetry import say

        say(resources.describe(plan.gmi_backend))
        from isaacgymenvs_gmi.launch import train

        from .guard import CollectiveGuard
        from .sync import GmiSync
        from .telemetry import EpochTelemetry

        store = dist.TCPStore(
            os.environ["MASTER_ADDR"],
            int(os.environ["MASTER_PORT"]),
            is_master=False,
            timeout=timedelta(seconds=timeout),
        )
        guard = CollectiveGuard(store, rank, world, timeout)
        from isaacgymenvs_gmi.comm.reduction import make_reducer
        from isaacgymenvs_gmi.comm.selector import select_strategy
        from isaacgymenvs_gmi.comm.transport import build_collectives

        mpl = plan.layout.mpl()
        comm, transports = build_collectives(
            rank,
            plan.layout,
            plan.gmi.intra_device,
            store,
            timeout,
            device=resources.rl_device,
            backend=plan.gmi_backend,
        )

        def report_choice(numel: int, chosen: str, seconds: dict[str, float]) -> None:
            if rank == 0:
                ms = ", ".join(f"{s} {t * 1e3:.2f} ms" for s, t in seconds.items())
                say(f"gradient reduction for {numel:,} values: {chosen} (measured: {ms})")

        reducer = make_reducer(plan.gmi.comm, plan.layout, comm, on_choice=report_choice)
        if rank == 0:
            say(
                f"gradient reduction: gmi.comm={plan.gmi.comm} (Algorithm 1 picks "
                f"{select_strategy(mpl)} for MPL={mpl}); {transports}"
            )
        horizon = int(cfg["train"]["params"]["config"]["horizon_length"])
        sync = GmiSync(
            rank,
            world,
            guard,
            startup_timeout_s=10 * timeout,
            telemetry=EpochTelemetry(plan.num_envs, horizon),
            reducer=reducer,
        )
        with tempfile.TemporaryDirectory(prefix=f"gmi{rank}-") as scratch:
            return train(cfg, plan, sync=sync, resources=resources, scratch_dir=scratch)
    finally:
        dist.destroy_process_group()
