"""Typed form of the serving settings (``serve.*``): a top-level group, as a serving run
(``gmi.mode=serve``) is not a training run."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any

from ._values import as_mapping, check_int, check_known_keys, to_plain
from .errors import ConfigError
from .paths import check_writable_folder


@dataclass(frozen=True)
class ServeSettings:
    """``serve.*``: what a serving run (``gmi.mode=serve``) plays and records.

    Attributes:
        steps: env steps per env on every GMI; ``None``: the task's episode length.
        record: a folder to record the experience into (sharded ``.npz`` files and a manifest,
            see :mod:`isaacgymenvs_gmi.channels.recording`); ``None`` records nothing.
    """

    steps: int | None = None
    record: str | None = None

    @classmethod
    def from_cfg(cls, cfg: Any, *, prefix: str = "serve") -> ServeSettings:
        """From the run's whole config (its ``serve`` group, when it has one)."""
        node = cfg.get(prefix) if hasattr(cfg, "get") else None
        given = as_mapping(prefix, node)
        check_known_keys(prefix, given, tuple(f.name for f in fields(cls)))
        steps = to_plain(given.get("steps"))
        record = to_plain(given.get("record"))
        if record not in ("", None):
            record = check_record_folder(f"{prefix}.record", record)
        return cls(
            steps=None if steps in (None, "") else check_int(f"{prefix}.steps", steps, minimum=1),
            record=record or None,
        )


def check_record_folder(key: str, value: Any) -> str:
    """A folder we can write a recording into: it exists and is empty of recordings, or can be
    created; returns its absolute path."""
    path = check_writable_folder(key, value)
    if os.path.exists(os.path.join(path, "manifest.json")):
        raise ConfigError(
            key, value, "already holds a recording (manifest.json); choose a new folder"
        )
    return path
