"""XLA CPU settings applied when the package is imported, before JAX starts its CPU backend.

XLA's CPU fusion emitters (on by default since JAX 0.7) turn the body-by-body kinematics of a
deep chain with turned joint frames into fused expressions that recompute every parent's product
for every child: one MJX step of the FrankaCabinet arm costs ~130 ms for 4 envs instead of
~1.6 ms, and most compiles take up to 40% longer. The classic emitters avoid both. GPU
backends are unaffected. A value the user already put in ``XLA_FLAGS`` is left alone.
"""

from __future__ import annotations

import os

CPU_DEFAULTS = {"xla_cpu_use_fusion_emitters": "false"}


def apply_cpu_defaults(environ: dict[str, str] | None = None) -> str:
    """Append :data:`CPU_DEFAULTS` missing from ``XLA_FLAGS`` in ``environ`` (default
    ``os.environ``); returns the resulting flags."""
    env = os.environ if environ is None else environ
    flags = env.get("XLA_FLAGS", "")
    extra = [f"--{k}={v}" for k, v in CPU_DEFAULTS.items() if f"--{k}" not in flags]
    env["XLA_FLAGS"] = " ".join([flags, *extra]).strip()
    return env["XLA_FLAGS"]
