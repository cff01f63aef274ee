"""Time to reduce ``model_bytes`` of gradients under each strategy: Table 2 of the paper as
printed (:func:`table_2_time`), and the cost of what this package's reducers do
(:func:`reduction_time`, which the planner uses).

g: GPUs, t: GMIs per GPU, b1: inter-GMI (inter-process) bandwidth, b2: inter-GPU (NCCL)
bandwidth, both in bytes/s. Returns seconds (bandwidth terms only; latency is not modelled).

Where they differ, and why: Table 2 charges MRR ``2(g-1)(t+1) M / (g B2)``, every one of its
``t + 1`` terms at NCCL's bandwidth. Read that way, at one GMI per GPU (t = 1) MRR costs twice
HAR, although both then run the same single ring across the GPUs, and Algorithm 1 picks MRR
exactly there. Our MRR (:class:`~.reducers.MultiRingReduction`) runs one ring per slot across
the GPUs, the ``t`` rings side by side on their own links, then lets the ``t`` partial sums meet
inside each GPU, at inter-GMI bandwidth: ``2(g-1) M / (g B2) + 2(t-1) M / (t B1)``. That is
HAR's bandwidth cost; what MRR gains is latency and overlap (no leader does all the cross-GPU
traffic), which this model leaves out. So under :func:`reduction_time` Algorithm 1's pick never
costs more than the alternative, and MRR is priced only on layouts where it can run.
"""

from __future__ import annotations

from .reducers import Strategy


def table_2_time(strategy: Strategy, g: int, t: int, model_bytes: float, b1: float, b2: float):
    """Table 2 of the paper, as printed (for any g and t, valid layout or not)."""
    m = float(model_bytes)
    if strategy == "mpr":
        return 2 * (g * t - 1) * m / (g * t * b1)
    if strategy == "mrr":
        return 2 * (g - 1) * (t + 1) * m / (g * b2)
    if strategy == "har":
        return 2 * (g - 1) * m / (g * b2) + 2 * (t - 1) * m / (t * b1)
    raise ValueError(f"unknown strategy {strategy!r}")


def reduction_time(strategy: Strategy, g: int, t: int, model_bytes: float, b1: float, b2: float):
    """What reducing ``model_bytes`` costs with this package's ``strategy`` on g GPUs of t GMIs
    each. Raises ``ValueError`` for MRR where it cannot run (one GPU, or t > g)."""
    if strategy == "mrr":
        if g * t > 1 and (g < 2 or t > g):
            raise ValueError(f"MRR cannot run on {g} GPU(s) of {t} GMIs (needs t <= g, g >= 2)")
        strategy = "har"  # the same bandwidth cost (see the module docstring)
    return table_2_time(strategy, g, t, model_bytes, b1, b2)
