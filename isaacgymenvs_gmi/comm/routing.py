"""Which transport carries each reduction group of a GMI layout, and the router that sends it there.

Across devices: NCCL between GPUs (groups with one GMI per GPU), else gloo on the host. Inside a
device (``gmi.intra_device``): ``shm`` (host shared memory; on a GPU host-staged, the paper's
way), ``ipc`` (CUDA IPC, GMIs of one GPU under MPS or time-sharing), ``gloo``, or ``auto``
(shm where supported on CPU devices; on a GPU, the faster of shm and ipc, measured at start-up).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial

import torch

from isaacgymenvs_gmi.placement.layout import GmiLayout

from .agreed_timing import agree_on_fastest, median_seconds, wait_for_device
from .collectives import Collectives, Group, TorchCollectives
from .shared_memory import SharedMemoryCollectives, shm_supported
from .store import Store

PROBE_ELEMS = (1 << 16, 1 << 20)  # an Ant-size gradient and a full bucket
PROBE_ROUNDS = 10


@dataclass(frozen=True)
class TransportChoice:
    intra: str  # shm | ipc | gloo (or "none": one GMI per device)
    across: str  # nccl | gloo (or "none": one device)
    measured: dict[str, float] | None = None  # auto on a GPU: seconds per probe, per candidate

    def __str__(self) -> str:
        text = f"inside a device: {self.intra}, across devices: {self.across}"
        if self.measured:
            ms = ", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in self.measured.items())
            sizes = " + ".join(f"{n:,}" for n in PROBE_ELEMS)
            text += f" (all-reduce of {sizes} floats inside a GPU, measured: {ms})"
        return text


def groups_for(layout: GmiLayout) -> list[Group]:
    """Every group any reduction strategy uses for ``layout``, in one fixed order (create them
    all, on every GMI, in this order): everyone, each device's GMIs, each slot's GMIs across
    devices, the devices' leaders."""
    mpl = layout.mpl()
    devices = [tuple(row) for row in mpl]
    slots = [tuple(row[s] for row in mpl) for s in range(layout.per_device)]
    return [tuple(range(layout.world_size)), *devices, *slots, tuple(layout.leaders())]


def ipc_possible(on_gpu: bool, backend: str) -> bool:
    """Whether the GMIs of a GPU can open each other's device memory: processes on one GPU
    under MPS or plain time-sharing, not MIG instances (separate memory partitions)."""
    return on_gpu and backend in ("mps", "direct")


def intra_device_transport(requested: str, ipc: bool) -> str:
    """``gmi.intra_device=requested`` resolved before measuring (``ipc``: CUDA IPC is possible;
    "auto" stays "auto" only where it must be measured: GMIs sharing one GPU)."""
    if requested == "shm" and not shm_supported():
        raise RuntimeError("gmi.intra_device=shm needs an x86-64 host; use auto or gloo")
    if requested == "ipc" and not ipc:
        raise RuntimeError(
            "gmi.intra_device=ipc needs GMIs that share one GPU's memory (MPS or direct "
            "sharing, not MIG, not CPU devices); use auto, shm or gloo"
        )
    if requested != "auto":
        return requested
    if ipc:
        return "auto"
    return "shm" if shm_supported() else "gloo"


def build_collectives(
    rank: int,
    layout: GmiLayout,
    intra_device: str,
    store: Store,
    timeout_s: float,
    device: torch.device | str = "cpu",
    backend: str = "mps",
) -> tuple[Collectives | None, TransportChoice]:
    """This GMI's transport for every group of :func:`groups_for` (call on every GMI: group
    creation is collective). ``device``: where this GMI's gradients live; ``backend``: cpu | mps
    | mig | direct. Under MIG (no shared memory, no reliable NCCL) everything is host-staged.
    ``layout`` may cover only the first GMIs of the process group (an async run's trainers):
    the others call this too and get ``(None, choice)``."""
    device = torch.device(device)
    on_gpu = device.type == "cuda"
    ipc = ipc_possible(on_gpu, backend)
    groups = groups_for(layout)
    mpl = layout.mpl()
    where = {gmi: d for d, row in enumerate(mpl) for gmi in row}
    # one GMI per GPU in each
    spans_gpus = [g for g in groups if len(g) > 1 and len({where[m] for m in g}) == len(g)]
    gloo = TorchCollectives(rank, groups, timeout_s)
    routes: dict[Group, Collectives] = {}
    across = "gloo" if len(mpl) > 1 else "none"
    if on_gpu:
        torch.cuda.set_device(device)
        if spans_gpus and backend != "mig":
            nccl = TorchCollectives(rank, spans_gpus, timeout_s, backend="nccl", device=device)
            routes.update(dict.fromkeys(spans_gpus, nccl))
            across = "nccl"
    if rank not in where:  # not in the layout: it only helped create the groups
        return None, TransportChoice(intra="none", across="none")
    device_group = tuple(mpl[where[rank]])
    choice = TransportChoice(intra="none", across=across)
    if len(device_group) > 1:
        transport = intra_device_transport(intra_device, ipc)
        key = f"gmi/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}/device{where[rank]}"
        local, intra, measured = _intra(
            transport, rank, device_group, store, key, timeout_s, device
        )
        if local is not None:
            routes[device_group] = local
        choice = TransportChoice(intra=intra, across=across, measured=measured)
    return RoutedCollectives(gloo, routes), choice


def _intra(transport, rank, members, store, key, timeout_s, device):
    """(collectives or None for gloo, name, measured seconds or None)."""
    if transport == "gloo":
        return None, "gloo", None
    shm = partial(SharedMemoryCollectives, rank, members, store, key + "/shm", timeout_s=timeout_s)
    if transport == "shm":
        return shm(), "shm", None
    from .cuda_ipc import CudaIpcCollectives

    ipc = CudaIpcCollectives(rank, members, store, key + "/ipc", device, timeout_s=timeout_s)
    if transport == "ipc" or not shm_supported():
        return ipc, "ipc", None
    host = shm()
    local = {
        "ipc": _time_all_reduce(ipc, members, device),
        "shm": _time_all_reduce(host, members, device),
    }
    choice, measured = agree_on_fastest(
        local, lambda total: host.all_reduce(total, members), len(members), prefer="ipc"
    )  # ipc wins ties
    if choice == "ipc":
        host.close()
        return ipc, "ipc", measured
    ipc.close()
    return host, "shm", measured


def _time_all_reduce(transport: Collectives, members: Group, device: torch.device) -> float:
    """Median seconds of an all-reduce of each probe size, from and back to ``device``, summed
    (the host-staged transport pays its copies here, as in training)."""
    routed = RoutedCollectives(transport, {})
    total = 0.0
    for n in PROBE_ELEMS:
        t = torch.ones(n, device=device)
        run = {"all_reduce": partial(routed.all_reduce, t, members)}
        total += median_seconds(run, PROBE_ROUNDS, wait=partial(wait_for_device, t))["all_reduce"]
    return total


class RoutedCollectives:
    """Each group to the transport that carries it (``routes``), others to ``default``. A
    transport with a ``device`` gets its tensors there: a tensor elsewhere goes through a
    staging buffer (pinned host memory for a GPU tensor) and back: the host-staged path."""

    def __init__(self, default: Collectives, routes: dict[Group, Collectives]):
        self.rank = default.rank
        self.default = default
        self.routes = {tuple(sorted(g)): c for g, c in routes.items()}
        self._staging: dict[tuple, torch.Tensor] = {}

    def _route(self, group: Group) -> Collectives:
        return self.routes.get(tuple(sorted(group)), self.default)

    def _run(self, group: Group, t: torch.Tensor, op) -> None:
        if len(group) < 2:
            return
        transport = self._route(group)
        device = getattr(transport, "device", None)
        if device is None or t.device == device:
            op(transport, t)
            return
        key = (device, t.dtype, t.numel())
        if key not in self._staging:
            pin = device.type == "cpu" and t.device.type == "cuda"
            self._staging[key] = torch.empty(
                t.numel(), dtype=t.dtype, device=device, pin_memory=pin
            )
        staged = self._staging[key]
        staged.copy_(t.reshape(-1))
        op(transport, staged)
        t.copy_(staged.view_as(t))

    def all_reduce(self, t, group):
        self._run(group, t, lambda c, x: c.all_reduce(x, group))

    def reduce(self, t, dst, group):
        self._run(group, t, lambda c, x: c.reduce(x, dst, group))

    def broadcast(self, t, src, group):
        self._run(group, t, lambda c, x: c.broadcast(x, src, group))
