"""Binding a GMI process to its slice of the node, before the simulator, JAX or CUDA start: CPU
affinity, thread pools sized to it, and on a GPU the visible device, MPS SM share and JAX memory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from isaacgymenvs_gmi.gmi.mps import client_environment
from isaacgymenvs_gmi.placement.cpu_sets import (
    choose_cores,
    oversubscribed,
    share_cores,
    split_cores,
    usable_cores,
)
from isaacgymenvs_gmi.placement.gpu_sharing import sm_percent
from isaacgymenvs_gmi.placement.layout import GmiPlace
from isaacgymenvs_gmi.placement.run_plan import RunPlan


@dataclass(frozen=True)
class GmiResources:
    """What one GMI was given."""

    place: GmiPlace
    cores: tuple[int, ...]
    threads: int  # what every pool of this GMI may run: its cores, or its share of them
    sim_device: str
    rl_device: str
    sm_percent: float | None  # MPS share of the GPU's SMs
    memory_fraction: float | None  # share of device memory JAX may take

    def describe(self, backend: str) -> str:
        p = self.place
        share = "" if self.sm_percent is None else f", {self.sm_percent:g}% of SMs"
        mem = "" if self.memory_fraction is None else f", {self.memory_fraction:.0%} of memory"
        shared = "" if self.threads == len(self.cores) else f" shared ({self.threads} thread(s))"
        return (
            f"GMI {p.gmi_id}: node {p.node}, device {p.device} slot {p.slot}"
            f"{' (leader)' if p.is_leader else ''}, backend {backend}{share}{mem}, "
            f"cores {list(self.cores)}{shared}, sim {self.sim_device}, "
            f"learner {self.rl_device}"
        )


def unbound(plan: RunPlan) -> GmiResources:
    """The resources of a run in one process, left as it is: every usable core, the config's
    devices."""
    cores = tuple(usable_cores())
    sim = plan.sim
    return GmiResources(
        plan.layout.place(0), cores, len(cores), sim.sim_device, sim.rl_device, None, None
    )


def bind(plan: RunPlan, place: GmiPlace) -> GmiResources:
    """Pin this process and size its pools; set the device environment before CUDA/JAX start."""
    layout = plan.layout
    cores, n = core_set(plan, place)
    os.sched_setaffinity(0, cores)
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
            os.environ.update(client_environment(share))
        sim_device = rl_device = "cuda:0"  # the only device this process sees
    return GmiResources(place, tuple(cores), n, sim_device, rl_device, share, fraction)


def core_set(plan: RunPlan, place: GmiPlace) -> tuple[list[int], int]:
    """The cores GMI ``place`` may run on and the threads its pools get (``gmi.cores``)."""
    layout, cores = plan.layout, usable_cores()
    crowded = oversubscribed(cores, layout.devices_per_node, layout.per_device)
    if choose_cores(plan.gmi.cores, crowded, bool(plan.terms.pinned)) == "shared":
        return share_cores(cores, layout.devices_per_node, layout.per_device)[place.local_rank]
    own = own_cores(plan, place.node)
    pinned = split_cores(cores, layout.devices_per_node, layout.per_device, own)
    return pinned[place.local_rank], len(pinned[place.local_rank])


def own_cores(plan: RunPlan, node: int) -> list[int]:
    """Per device of ``node``: how many of its first GMIs (the plan's ``pinned`` ones, e.g. async
    trainers) keep cores of their own when GMIs outnumber cores; [] where none is on ``node``."""
    places = [plan.layout.place(g) for g in plan.terms.pinned]
    here = [p for p in places if p.node == node]
    if not here:
        return []
    per_device = [0] * plan.layout.devices_per_node
    for p in here:
        if p.slot != per_device[p.local_device]:
            raise ValueError(f"pinned GMIs must come first on their device: {plan.terms.pinned}")
        per_device[p.local_device] += 1
    return per_device


def _visible_device(plan: RunPlan, place: GmiPlace) -> str:
    from isaacgymenvs_gmi.placement.inventory import detect_inventory

    gpu = detect_inventory().gpus[place.local_device]
    if plan.gmi_backend == "mig":
        return gpu.mig_instances[place.slot].uuid
    return str(gpu.index)
