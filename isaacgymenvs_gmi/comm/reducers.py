"""MPR, MRR and HAR (paper Sec. 4.1, Fig. 4) over a :class:`Collectives` transport.

Each reducer turns every GMI's flat gradient (a 1-D tensor) into the mean over all GMIs, in
place. Only the layout decides who talks to whom:

- MPR: one all-reduce among all GMIs (host-staged: the paper's generic baseline).
- MRR: step 1, one ring per slot across GPUs (GMIs with the same slot, one per GPU); step 2, the
  partial sums meet among the GMIs of each GPU. Needs as many GMIs on every GPU, <= GPUs.
- HAR: step 1, reduce to each GPU's leader; step 2, all-reduce among leaders; step 3, each leader
  broadcasts the result on its GPU.
- auto (:class:`TunedReduction`): whichever of the valid ones is fastest here, measured once per
  gradient size; Algorithm 1's pick wins ties.
"""

from __future__ import annotations

import abc
from functools import partial
from typing import Literal

import torch

from isaacgymenvs_gmi.placement.layout import GmiLayout

from .agreed_timing import agree_on_fastest, median_seconds, wait_for_device
from .collectives import Collectives, Group
from .selector import Strategy, mrr_valid, select_strategy


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
        leader = self.my_device[0]
        self.comm.reduce(flat, leader, self.my_device)
        if self.place.is_leader:
            self.comm.all_reduce(flat, self.leaders)
        self.comm.broadcast(flat, leader, self.my_device)


REDUCERS: dict[Strategy, type[Reducer]] = {
    "mpr": MultiProcessReduction,
    "mrr": MultiRingReduction,
    "har": HierarchicalReduction,
}


def make_reducer(
    strategy: Strategy | Literal["auto"], layout: GmiLayout, comm: Collectives, on_choice=None
) -> Reducer:
    """``strategy`` "auto": :class:`TunedReduction` with Algorithm 1's pick as its prior."""
    if strategy == "auto":
        return TunedReduction(layout, comm, select_strategy(layout.mpl()), on_choice=on_choice)
    return REDUCERS[strategy](layout, comm)


class TunedReduction(Reducer):
    """``gmi.comm=auto``: the fastest valid strategy, measured on this machine and layout.

    The first time a gradient of a given size arrives, every GMI times each candidate on scratch
    copies (a few rounds, in a rotating order), the per-GMI medians are summed across GMIs (so
    every GMI sees the same numbers and picks the same winner), and the winner reduces that size
    from then on. Ties within 2% go to Algorithm 1's pick (``prior``). The real gradient is
    reduced once, by the winner, so results stay exact.
    """

    strategy = "auto"

    def __init__(self, layout, comm, prior: Strategy, rounds: int = 10, on_choice=None):
        super().__init__(layout, comm)
        self.prior, self.rounds, self.on_choice = prior, rounds, on_choice
        valid = ["mpr", "har", *(["mrr"] if mrr_valid(layout.mpl()) else [])]
        self.candidates = {s: REDUCERS[s](layout, comm) for s in valid}
        self.choice: dict[int, Strategy] = {}  # gradient numel -> strategy

    def sum(self, flat):
        n = flat.numel()
        if n not in self.choice:
            self._tune(flat)
        self.candidates[self.choice[n]].sum(flat)

    def _tune(self, flat: torch.Tensor) -> None:
        scratch = torch.empty_like(flat)
        local = median_seconds(
            {s: partial(r.sum, scratch) for s, r in self.candidates.items()},
            self.rounds,
            wait=lambda: wait_for_device(scratch),
            setup=lambda: scratch.copy_(flat),
        )
        best, mean = agree_on_fastest(
            local,
            lambda total: self.comm.all_reduce(total, self.everyone),
            self.layout.world_size,
            prefer=self.prior,
            tolerance=1.02,
        )
        self.choice[flat.numel()] = best
        if self.on_choice is not None:
            self.on_choice(flat.numel(), best, mean)
