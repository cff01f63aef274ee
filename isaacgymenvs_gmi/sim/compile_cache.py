"""A persistent XLA compilation cache for everything the physics jits, shared by a run's GMIs,
later runs and the planner's trials.

``gmi.compile_cache``: ``auto`` (``$XDG_CACHE_HOME/isaacgymenvs_gmi/xla``, else ``~/.cache/...``),
``off``, or a folder. JAX's cache key omits the CPU's instruction set, so entries live in a
subfolder per CPU (:func:`machine_key`), bounded by :data:`MAX_BYTES` (least recently used go).
``python -m isaacgymenvs_gmi.sim.compile_cache`` prints the folder and its size; ``--clear``
empties it.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 4 << 30  # 4 GiB
CPU_FINGERPRINT_ENV = "ISAACGYMENVS_GMI_CPU_FINGERPRINT"  # replaces the CPU's (tests, clusters)
_JAX_ENV = {  # JAX reads these when it starts
    "dir": "JAX_COMPILATION_CACHE_DIR",
    "min_time": "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS",
    "min_size": "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES",
    "max_size": "JAX_COMPILATION_CACHE_MAX_SIZE",
}


def cpu_fingerprint() -> str:
    """What this CPU executes: the architecture and its feature flags (``/proc/cpuinfo``)."""
    override = os.environ.get(CPU_FINGERPRINT_ENV)
    if override:
        return override
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            name, _, value = line.partition(":")
            if name.strip() in ("flags", "Features"):
                flags = " ".join(sorted(value.split()))
                break
    except OSError:
        flags = platform.processor()
    return f"{platform.machine()} {flags}"


def machine_key() -> str:
    """Names the cache subfolder: the CPU fingerprint and the Python version, hashed."""
    text = f"{cpu_fingerprint()} | python {sys.version_info[:2]}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cache_root(setting: str) -> Path | None:
    """The folder ``gmi.compile_cache`` names (before the machine subfolder), or None (off)."""
    if setting == "off":
        return None
    if setting == "auto":
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
        return Path(os.path.expanduser(base)) / "isaacgymenvs_gmi" / "xla"
    return Path(os.path.expanduser(setting))


def cache_folder(setting: str) -> Path | None:
    """This machine's cache folder for ``gmi.compile_cache=setting``, or None (off)."""
    root = cache_root(setting)
    return None if root is None else root / machine_key()


def use_compile_cache(folder: Path | None) -> None:
    """Compile through the cache in ``folder`` (None: none) here and in processes started later."""
    if folder is None:
        os.environ.pop(_JAX_ENV["dir"], None)
        _jax_update("jax_compilation_cache_dir", None)
        return
    folder.mkdir(parents=True, exist_ok=True)
    values = {"dir": str(folder), "min_time": "0", "min_size": "0", "max_size": str(MAX_BYTES)}
    for name, value in values.items():
        os.environ[_JAX_ENV[name]] = value
    _jax_update("jax_compilation_cache_dir", str(folder))
    _jax_update("jax_persistent_cache_min_compile_time_secs", 0.0)
    _jax_update("jax_persistent_cache_min_entry_size_bytes", 0)
    _jax_update("jax_compilation_cache_max_size", MAX_BYTES)


def _jax_update(name: str, value) -> None:
    if "jax" in sys.modules:  # already started: its config, not the environment, counts now
        import jax

        jax.config.update(name, value)


@dataclass
class CompileCounts:
    """Programs this process asked XLA for: ``loaded`` from the persistent cache, ``compiled``
    through it, ``uncached`` (compiled outside it), and stored programs ``loaded_whole``."""

    requests: int = 0
    loaded: int = 0
    backend_compiles: int = 0
    loaded_whole: int = 0

    @property
    def compiled(self) -> int:
        return self.requests - self.loaded

    @property
    def uncached(self) -> int:  # XLA times every program it hands out, cache hits included
        return max(self.backend_compiles - self.requests, 0)

    def describe(self) -> str:
        whole = f"{self.loaded_whole} loaded whole (not lowered), " if self.loaded_whole else ""
        line = (
            f"XLA programs: {whole}{self.loaded} loaded from the compile cache, "
            f"{self.compiled} compiled"
        )
        return line + (f", {self.uncached} outside the cache" if self.uncached else "")


_counts: CompileCounts | None = None


def compile_counts() -> CompileCounts:
    """This process's counts (listening from the first call on: call it before compiling)."""
    global _counts
    if _counts is None:
        from jax import monitoring

        counts = _counts = CompileCounts()

        def on_event(event: str, **_) -> None:
            if event == "/jax/compilation_cache/compile_requests_use_cache":
                counts.requests += 1
            elif event == "/jax/compilation_cache/cache_hits":
                counts.loaded += 1

        def on_duration(event: str, duration: float, **_) -> None:
            if event == "/jax/core/compile/backend_compile_duration":
                counts.backend_compiles += 1

        monitoring.register_event_listener(on_event)
        monitoring.register_event_duration_secs_listener(on_duration)
    return _counts


def main(argv: list[str]) -> int:
    setting = next((a.split("=", 1)[1] for a in argv if a.startswith("gmi.compile_cache=")), "auto")
    root = cache_root(setting)
    if root is None:
        print("gmi.compile_cache=off: no cache")
        return 0
    if "--clear" in argv:
        shutil.rmtree(root, ignore_errors=True)
        print(f"cleared {root}")
        return 0
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0
    print(f"{root}: {size / 2**20:.1f} MiB (this machine: {cache_folder(setting)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
