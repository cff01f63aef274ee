"""Layout-aware gradient reduction (paper Sec. 4.1): Algorithm 1 (:data:`RULES`, first matching
row of the GMI-to-GPU mapping list ``MPL``, e.g. ``[[0, 1, 2], [3, 4, 5]]``, wins), the reducers
of Fig. 4 over a :class:`Collectives` transport, and :func:`build_gradient_reduction`.

Each reducer turns every GMI's flat gradient (1-D) into the mean over all GMIs, in place:

- MPR: one all-reduce among all GMIs (the paper's host-staged baseline).
- MRR: a ring per slot across GPUs, then the partial sums meet inside each GPU. Needs as many
  GMIs on every GPU, <= GPUs.
- HAR: reduce to each GPU's leader, all-reduce among leaders, each leader broadcasts.
- auto (:class:`TunedReduction`): the fastest valid one, measured per gradient size.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from functools import partial
from typing import Literal

import torch

from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.placement.layout import GmiLayout

from .agreed_timing import agree_on_fastest, median_seconds, wait_for_device
from .collectives import Collectives
from .routing import build_collectives, ipc_possible
from .store import Store

Strategy = Literal["mpr", "mrr", "har"]
MPL = Sequence[Sequence[int]]
Report = Callable[[str], None]  # one status line

# --- Algorithm 1 ----------------------------------------------------------------------------
RULES: tuple[tuple[str, Callable[[MPL], bool], Strategy], ...] = (
    ("all GMIs on one GPU", lambda mpl: len(mpl) <= 1, "mpr"),
    ("GPUs hold different numbers of GMIs", lambda mpl: len({len(r) for r in mpl}) > 1, "har"),
    ("more GMIs per GPU than GPUs", lambda mpl: len(mpl[0]) > len(mpl), "har"),
    ("otherwise", lambda mpl: True, "mrr"),
)


def select_strategy(mpl: MPL) -> Strategy:
    """The strategy Algorithm 1 picks for ``mpl``."""
    return next(strategy for _, applies, strategy in RULES if applies(mpl))


def mrr_valid(mpl: MPL) -> bool:
    """MRR needs as many GMIs on every GPU, and no more GMIs per GPU than GPUs."""
    return len(mpl) > 1 and len({len(r) for r in mpl}) == 1 and len(mpl[0]) <= len(mpl)


def check_transports(
    comm: str, intra_device: str, layout: GmiLayout, *, on_gpu: bool, backend: str
) -> None:
    """``gmi.comm`` and ``gmi.intra_device`` are ones ``layout`` and the platform allow
    (ConfigError naming the key): MRR's shape, and CUDA IPC only between GMIs sharing a GPU."""
    if comm == "mrr" and layout.world_size > 1 and not mrr_valid(layout.mpl()):
        raise ConfigError(
            "gmi.comm",
            "mrr",
            f"needs as many GMIs on every GPU and no more than GPUs; MPL={layout.mpl()} "
            "(use auto, mpr or har)",
        )
    if intra_device == "ipc" and not ipc_possible(on_gpu, backend):
        raise ConfigError(
            "gmi.intra_device",
            "ipc",
            f"needs GMIs sharing a GPU under MPS or direct sharing (here: {backend}"
            f"{'' if on_gpu else ', no GPU'}); use auto, shm or gloo",
        )


# --- the reducers ---------------------------------------------------------------------------


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
    """``gmi.comm=auto``: at a gradient size's first arrival every GMI times each candidate on
    scratch copies; the timings are agreed across GMIs (:func:`agree_on_fastest`) and the
    winner reduces that size from then on (ties within 2% go to ``prior``, Algorithm 1's
    pick). The real gradient is reduced once, by the winner, so results stay exact."""

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


# --- from a layout to a reducer --------------------------------------------------------------
def build_gradient_reduction(
    rank: int,
    layout: GmiLayout,
    *,
    comm: str,
    intra_device: str,
    store: Store,
    timeout_s: float,
    device: torch.device | str,
    backend: str,
    report: Report | None = None,
) -> Reducer | None:
    """This GMI's reducer for ``layout`` (``comm``: auto | mpr | mrr | har), over transports
    from :func:`~.routing.build_collectives` (same ``intra_device``, ``device``, ``backend``;
    GMIs outside ``layout`` get None). ``report`` (give it on one GMI only) receives the
    start-up line now and, under ``auto``, one line per gradient size once measured."""
    collectives, transports = build_collectives(
        rank, layout, intra_device, store, timeout_s, device=device, backend=backend
    )
    if collectives is None:
        return None

    def report_choice(numel: int, chosen: str, seconds: dict[str, float]) -> None:
        if report is not None:
            ms = ", ".join(f"{s} {t * 1e3:.2f} ms" for s, t in seconds.items())
            report(f"gradient reduction for {numel:,} values: {chosen} (measured: {ms})")

    reducer = make_reducer(comm, layout, collectives, on_choice=report_choice)
    if report is not None:
        mpl = layout.mpl()  # Algorithm 1's pick is ``auto``'s prior
        report(
            f"gradient reduction: gmi.comm={comm} (Algorithm 1 picks {select_strategy(mpl)} "
            f"for MPL={mpl}); {transports}"
        )
    return reducer
