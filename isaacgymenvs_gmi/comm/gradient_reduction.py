"""One call from a GMI layout to a working gradient reducer and its start-up report.

Builds this GMI's transports for every group (:func:`~.routing.build_collectives`; collective:
call it on every GMI, in the same order), the reducer ``gmi.comm`` asks for
(:func:`~.reducers.make_reducer`) and the lines that say what was chosen: Algorithm 1's pick,
the transports, and for ``auto`` the strategy measured fastest for each gradient size.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from isaacgymenvs_gmi.placement.layout import GmiLayout

from .reducers import Reducer, make_reducer
from .routing import build_collectives
from .selector import select_strategy
from .store import Store

Report = Callable[[str], None]  # one status line


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
    """This GMI's reducer for ``layout``, over transports built for it, reported.

    ``comm``: ``gmi.comm`` (auto | mpr | mrr | har); ``intra_device``: ``gmi.intra_device``;
    ``device``: where this GMI's gradients live; ``backend``: how the GPU is shared (cpu | mps |
    mig | direct). ``report``, when given, receives the start-up line now and, under ``auto``,
    one line per gradient size once it is measured (give it on one GMI only).

    ``layout`` may cover only the first GMIs of the process group; the others call this too
    (group creation is collective) and get None.
    """
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
