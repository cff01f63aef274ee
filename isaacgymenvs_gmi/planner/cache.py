"""Search results kept on disk and reused: one JSON file per (task, train and task config,
request, search settings, hardware fingerprint, package versions).

An entry is used only when its key, hardware fingerprint and versions match this machine's; it
is written whole (a temporary file renamed into place), and a damaged entry counts as a miss.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from isaacgymenvs_gmi.atomic_file import write_atomically
from isaacgymenvs_gmi.placement.inventory import Inventory

PACKAGES = ("isaacgymenvs_gmi", "torch", "jax", "jaxlib", "mujoco", "mujoco-mjx", "rl-games")
# train.params.config keys that name or bound a run without changing what an epoch costs
RUN_LENGTH_KEYS = frozenset(
    {
        "name",
        "full_experiment_name",
        "max_epochs",
        "max_frames",
        "save_frequency",
        "save_best_after",
        "score_to_win",
        "print_stats",
        "train_dir",
    }
)


def default_cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "isaacgymenvs_gmi" / "plans"


def _cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def fingerprint(inventory: Inventory) -> dict[str, Any]:
    """The hardware a result was measured on."""
    return {
        "cpu": _cpu_model(),
        "cores": len(inventory.cores),
        "gpus": [
            {
                "name": g.name,
                "sms": g.sm_count,
                "memory_bytes": g.memory_bytes,
                "mig": sorted(m.name for m in g.mig_instances) if g.mig_enabled else None,
            }
            for g in inventory.gpus
        ],
        "driver": inventory.driver,
    }


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def train_config_hash(train_params: Mapping[str, Any]) -> str:
    """Hash of ``train.params`` without the keys that only name or bound a run."""
    params = dict(train_params)
    config = {k: v for k, v in (params.get("config") or {}).items() if k not in RUN_LENGTH_KEYS}
    return digest({**params, "config": config})


class PlanCache:
    """Entries under ``root``; ``identity``: what a result depends on besides the machine."""

    def __init__(self, root: Path, task: str, identity: Mapping[str, Any], machine: dict) -> None:
        self.root, self.task = Path(root), task
        self.machine = {"fingerprint": machine, "versions": versions()}
        self.key = digest({"task": task, **identity, **self.machine})
        self.path = self.root / f"{task}-{self.key[:16]}.json"

    def load(self) -> dict | None:
        """The stored result, or None (absent, damaged, or measured elsewhere)."""
        try:
            entry = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return None
        same = isinstance(entry, dict) and entry.get("key") == self.key
        if not same or {k: entry.get(k) for k in self.machine} != self.machine:
            return None
        return entry.get("result")

    def store(self, result: dict) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        entry = {"key": self.key, "task": self.task, **self.machine, "result": result}
        write_atomically(self.path, (json.dumps(entry, indent=2) + "\n").encode())
        return self.path
