"""OmegaConf resolvers used by IsaacGymEnvs task and train files, which interpolate with
``${eq:a,b}`` and ``${contains:needle,haystack}`` (case-insensitive), ``${if:cond,a,b}`` and
``${resolve_default:default,arg}`` (``default`` when ``arg`` is empty): they must be registered
before a config is composed.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

from omegaconf import OmegaConf

logger = logging.getLogger(__name__)


RESOLVERS: dict[str, Callable[..., Any]] = {
    "eq": lambda x, y: str(x).lower() == str(y).lower(),
    "contains": lambda needle, haystack: str(needle).lower() in str(haystack).lower(),
    "if": lambda cond, a, b: a if cond else b,  # a non-empty string counts as true
    "resolve_default": lambda default, arg: default if arg == "" else arg,
}


def _import_isaacgymenvs_first() -> None:
    # IsaacGymEnvs registers the same resolver names at import time without `replace`, so
    # importing it after us would raise. When it is installed, let it register first.
    if importlib.util.find_spec("isaacgymenvs") is None:
        return
    try:
        importlib.import_module("isaacgymenvs")
    except Exception:  # an unusable install must not stop us; ours are registered anyway
        logger.warning("isaacgymenvs is installed but failed to import", exc_info=True)


def register_resolvers() -> None:
    """Register ``eq``, ``contains``, ``if`` and ``resolve_default``; safe to call repeatedly."""
    _import_isaacgymenvs_first()
    for name, fn in RESOLVERS.items():
        OmegaConf.register_new_resolver(name, fn, replace=True)
