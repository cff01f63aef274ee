"""Typed form of the serving settings (``serve.*``): a top-level group, as a serving run
(``gmi.mode=serve``) is not a training run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.config.paths import check_writable_folder
from isaacgymenvs_gmi.config.schema import Int, Settings, Text, setting


@dataclass(frozen=True)
class _RecordFolder(Text):
    def check(self, key: str, value: Any) -> Any:
        folder = super().check(key, value)
        return None if folder is None else check_record_folder(key, folder)


@dataclass(frozen=True)
class ServeSettings(Settings):
    """``serve.*``: what a serving run (``gmi.mode=serve``) plays and records.

    Attributes:
        steps: env steps per env on every GMI; ``None``: the task's episode length.
        record: a folder to record the experience into (sharded ``.npz`` files and a manifest,
            see :mod:`isaacgymenvs_gmi.channels.recording`); ``None`` records nothing.
    """

    steps: int | None = setting(None, Int(1, optional=True))
    record: str | None = setting(None, _RecordFolder(optional=True))

    PREFIX = "serve"


def check_record_folder(key: str, value: Any) -> str:
    """A folder we can write a recording into: it exists and is empty of recordings, or can be
    created; returns its absolute path."""
    path = check_writable_folder(key, value)
    if os.path.exists(os.path.join(path, "manifest.json")):
        why = "already holds a recording (manifest.json); choose a new folder"
        raise ConfigError(key, value, why)
    return path
