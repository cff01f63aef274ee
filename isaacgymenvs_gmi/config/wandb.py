"""Weights & Biases settings with IsaacGymEnvs' keys (``wandb_activate``, ``wandb_group``, ...).
wandb is an optional extra: asking for it without the package is refused before anything starts.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from typing import Any

from ._values import select
from .errors import ConfigError
from .schema import FLAG, Many, Settings, Text, parse, setting

INSTALL = "pip install -e '.[wandb]' (or pip install wandb==0.31.0)"


def wandb_installed() -> bool:
    return importlib.util.find_spec("wandb") is not None


_TEXT = Text("a string", optional=True)


@dataclass(frozen=True)
class WandbSettings(Settings):
    """IsaacGymEnvs' ``wandb_*`` keys: ``activate`` logs the run from GMI 0 (TensorBoard
    scalars synced, the run config logged); the run's ``group``, ``name`` (none: the
    experiment's), ``entity``, ``project`` and ``tags``; ``logcode_dir``: a folder whose code is
    logged with the run."""

    activate: bool = setting(False, FLAG, key="wandb_activate")
    group: str | None = setting(None, _TEXT, key="wandb_group")
    name: str | None = setting(None, _TEXT, key="wandb_name")
    entity: str | None = setting(None, _TEXT, key="wandb_entity")
    project: str = setting("isaacgymenvs", Text("the name of a project"), key="wandb_project")
    tags: tuple[str, ...] = setting(
        (), Many(Text("a string"), "strings", empty=True), key="wandb_tags"
    )
    logcode_dir: str | None = setting(None, _TEXT, key="wandb_logcode_dir")

    @classmethod
    def from_cfg(cls, cfg: Any) -> WandbSettings:
        """From the composed top-level config (raises :class:`ConfigError` naming the key)."""
        if not FLAG.check("wandb_activate", select(cfg, "wandb_activate", False)):
            return cls()
        if not wandb_installed():
            raise ConfigError("wandb_activate", True, f"needs the wandb package: {INSTALL}")
        return parse(cls, cfg)

    def cross_check(self, prefix: str) -> None:
        if self.logcode_dir and not os.path.isdir(self.logcode_dir):
            raise ConfigError("wandb_logcode_dir", self.logcode_dir, "is not a folder")
