"""OmegaConf resolvers used by IsaacGymEnvs task and train files.

Upstream files interpolate with four custom resolvers, so they must be registered before a
config is composed:

* ``${eq:a,b}``: case-insensitive string equality.
* ``${contains:needle,haystack}``: case-insensitive substring test.
* ``${if:cond,a,b}``: ``a`` when ``cond`` is truthy (a non-empty string counts), else ``b``.
* ``${resolve_default:default,arg}``: ``default`` when ``arg`` is the empty string, else ``arg``.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

from omegaconf import OmegaConf

logger = logging.getLogger(__name__)


def _eq(x: Any, y: Any) -> bool:
    return str(x).lower() == str(y).lower()


def _contains(needle: Any, haystack: Any) -> bool:
    return str(needle).lower() in str(haystack).lower()


def _if(cond: Any, a: Any, b: Any) -> Any:
    return a if cond else b


def _resolve_default(default: Any, arg: Any) -> Any:
    return default if arg == "" else arg


RESOLVERS: dict[str, Callable[..., Any]] = {
    "eq": _eq,
    "contains": _contains,
    "if": _if,
    "resolve_default": _resolve_default,
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
