"""XLA CPU settings applied when the package is imported, before JAX starts its CPU backend.

XLA's CPU fusion emitters (on by default since JAX 0.7) make one MJX step of a deep chain such as
the FrankaCabinet arm ~80x slower (every parent's product recomputed for every child) and most
compiles up to 40% longer; the classic emitters avoid both. GPU backends are unaffected, and a
value the user put in ``XLA_FLAGS`` is left alone. jaxlib 0.11 dropped the flag and aborts on an
unknown ``XLA_FLAGS`` entry, so the defaults apply only to the releases that still know them.
"""

from __future__ import annotations

import os
from importlib import metadata

CPU_DEFAULTS = {"xla_cpu_use_fusion_emitters": "false"}
LAST_JAXLIB_WITH_DEFAULTS = (0, 10)  # jaxlib 0.11 aborts on the flag: "Unknown flag in XLA_FLAGS"


def jaxlib_knows_defaults(version: str | None = None) -> bool:
    """Whether ``jaxlib`` (the installed one unless ``version`` is given) still parses
    :data:`CPU_DEFAULTS`; an absent or unreadable version counts as not knowing them."""
    if version is None:
        try:
            version = metadata.version("jaxlib")
        except metadata.PackageNotFoundError:
            return False
    try:
        major, minor = (int(part) for part in version.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) <= LAST_JAXLIB_WITH_DEFAULTS


def apply_cpu_defaults(environ: dict[str, str] | None = None) -> str:
    """Append :data:`CPU_DEFAULTS` missing from ``XLA_FLAGS`` in ``environ`` (default
    ``os.environ``); returns the resulting flags."""
    env = os.environ if environ is None else environ
    flags = env.get("XLA_FLAGS", "")
    if not jaxlib_knows_defaults():
        return flags
    extra = [f"--{k}={v}" for k, v in CPU_DEFAULTS.items() if f"--{k}" not in flags]
    env["XLA_FLAGS"] = " ".join([flags, *extra]).strip()
    return env["XLA_FLAGS"]
