"""Table 2 of the paper: time to reduce ``model_bytes`` of gradients under each strategy.

g: GPUs, t: GMIs per GPU, b1: inter-GMI (inter-process) bandwidth, b2: inter-GPU (NCCL)
bandwidth, both in bytes/s. Returns seconds (bandwidth terms only; latency is not modelled).
"""

from __future__ import annotations

from .selector import Strategy


def reduction_time(strategy: Strategy, g: int, t: int, model_bytes: float, b1: float, b2: float):
    m = float(model_bytes)
    if strategy == "mpr":
        return 2 * (g * t - 1) * m / (g * t * b1)
    if strategy == "mrr":
        return 2 * (g - 1) * (t + 1) * m / (g * b2)
    if strategy == "har":
        return 2 * (g - 1) * m / (g * b2) + 2 * (t - 1) * m / (t * b1)
    raise ValueError(f"unknown strategy {strategy!r}")
