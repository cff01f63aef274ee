"""MPR, MRR and HAR (paper Sec. 4.1, Fig. 4) over a :class:`Collectives` transport.

Each reducer turns every GMI's flat gradient (a 1-D tensor) into the mean over all GMIs, in
place. Only the layout decides who talks to whom:

- MPR: one all-reduce among all GMIs (host-staged: the paper's generic baseline).
- MRR: step 1, one ring per slot across GPUs (GMIs with the same slot, one per GPU); step 2, the
  partial sums meet among the GMIs of each GPU. Needs as many GMIs on every GPU, <= GPUs.
- HAR: step 1, reduce to each GPU's leader; step 2, all-reduce among leaders; step 3, each leader
  broadcasts the result on its GPU.
"""

from __future__ import annotations

import abc

import torch

from isaacgymenvs_gmi.gmi.layout import GmiLayout

from .collectives import Collectives, Group
from .selector import Strategy, mrr_valid


def groups_for(layout: GmiLayout) -> list[Group]:
    """Every group any strategy uses for ``layout``, in one fixed order (create them all, on
    every GMI, in this order)."""
    mpl = layout.mpl()
    devices = [tuple(row) for row in mpl]
    slots = [tuple(row[s] for row in mpl) for s in range(layout.per_device)]
    return [tuple(range(layout.world_size)), *devices, *slots, tuple(layout.leaders())]


class Reducer(abc.ABC):
    """Mean of every GMI's flat gradient, in place; subclasses say how the sum travels."""

    strategy: Strategy

    def __init__(self, layout: GmiLayout, comm: Collectives):
        self.layout, self.comm = layout, comm
        self.place = layout.place(comm.rank)
        self.everyone = tuple(range(layout.world_size))
        self.my_device = tuple(layout.mpl()[self.place.device])
        self.my_slot = tuple(row[self.place.slot] for row in layout.mpl())
        self.leaders = tuple(layout.leaders())

    def mean(self, flat: torch.Tensor) -> None:
        self.sum(flat)
        flat /= self.layout.world_size

    @abc.abstractmethod
    def sum(self, flat: torch.Tensor) -> None:
        """Replace ``flat`` (1-D) on every GMI by the sum over all GMIs."""


class MultiProcessReduction(Reducer):
    strategy = "mpr"

    def sum(self, flat):
        self.comm.all_reduce(flat, self.everyone)


class MultiRingReduction(Reducer):
    strategy = "mrr"

    def __init__(self, layout, comm):
        super().__init__(layout, comm)
        if not mrr_valid(layout.mpl()):
            raise ValueError(f"MRR needs <= GMIs per GPU than GPUs, equal on all: {layout.mpl()}")

    def sum(self, flat):
        self.comm.all_reduce(flat, self.my_slot)  # ring of my slot across GPUs
        self.comm.all_reduce(flat, self.my_device)  # partial sums of all slots meet


class HierarchicalReduction(Reducer):
    strategy = "har"

    def sum(self, flat):
        leader = self.my_device[self.layout.leader_slot]
        self.comm.reduce(flat, leader, self.my_device)
        if self.place.is_leader:
            self.comm.all_reduce(flat, self.leaders)
        self.comm.broadcast(flat, leader, self.my_device)


REDUCERS: dict[Strategy, type[Reducer]] = {
    "mpr": MultiProcessReduction,
    "mrr": MultiRingReduction,
    "har": HierarchicalReduction,
}


def make_reducer(strategy: Strategy, layout: GmiLayout, comm: Collectives) -> Reducer:
    return REDUCERS[strategy](layout, comm)
