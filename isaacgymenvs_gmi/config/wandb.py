"""Weights & Biases settings with IsaacGymEnvs' keys (``wandb_activate``, ``wandb_group``, ...).

wandb is an optional extra (``pip install -e '.[wandb]'``): asking for it without the package is
refused before anything starts, naming the key and the install command.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._values import select, to_plain
from .errors import ConfigError
from .schema import FLAG

INSTALL = "pip install -e '.[wandb]' (or pip install wandb==0.31.0)"


def wandb_installed() -> bool:
    return importlib.util.find_spec("wandb") is not None


@dataclass(frozen=True)
class WandbSettings:
    """Attributes (IsaacGymEnvs' top-level keys without the ``wandb_`` prefix):
    activate: log the run (GMI 0 only): TensorBoard scalars synced, the run config logged.
    group, name, entity, project: the wandb run's group, display name, entity and project
        (empty group / entity: wandb's defaults).
    tags: the run's tags.
    logcode_dir: a folder whose code is logged with the run (empty: none).
    """

    activate: bool = False
    group: str = ""
    name: str = ""
    entity: str = ""
    project: str = "isaacgymenvs"
    tags: tuple[str, ...] = ()
    logcode_dir: str = ""

    @classmethod
    def from_cfg(cls, cfg: Any, installed: Callable[[], bool] | None = None) -> WandbSettings:
        """From the composed top-level config (raises :class:`ConfigError` naming the key);
        ``installed`` says whether wandb can be imported (default: look for it)."""
        if not FLAG.check("wandb_activate", select(cfg, "wandb_activate", False)):
            return cls()
        if not (installed or wandb_installed)():
            raise ConfigError("wandb_activate", True, f"needs the wandb package: {INSTALL}")
        tags = to_plain(select(cfg, "wandb_tags", []) or [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ConfigError("wandb_tags", tags, "must be a list of strings")
        texts = {}
        for key in ("group", "name", "entity", "project", "logcode_dir"):
            value = select(cfg, f"wandb_{key}", "")
            value = "" if value is None else value
            if not isinstance(value, str):
                raise ConfigError(f"wandb_{key}", value, "must be a string")
            texts[key] = value
        if not texts["project"]:
            raise ConfigError("wandb_project", "", "must name a project")
        if texts["logcode_dir"] and not os.path.isdir(texts["logcode_dir"]):
            raise ConfigError("wandb_logcode_dir", texts["logcode_dir"], "is not a folder")
        return cls(activate=True, tags=tuple(tags), **texts)
