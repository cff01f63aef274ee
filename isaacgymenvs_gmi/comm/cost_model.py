"""Seconds to reduce ``model_bytes`` of gradients per strategy: Table 2 of the paper as printed
(:func:`table_2_time`) and what this package's reducers cost (:func:`reduction_time`, for the
planner). g: GPUs, t: GMIs per GPU, b1: inter-GMI and b2: inter-GPU bandwidth (bytes/s);
bandwidth terms only.

Table 2 charges MRR ``2(g-1)(t+1) M / (g B2)``, all at NCCL's bandwidth: at t = 1 twice HAR,
though both run the same single ring. Our MRR runs the ``t`` slot rings side by side, then the
partial sums meet inside each GPU at inter-GMI bandwidth: ``2(g-1) M / (g B2) + 2(t-1) M /
(t B1)``, HAR's cost (MRR's gain, latency and overlap, is not modelled).
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
