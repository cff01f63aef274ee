"""Import MJX without what only a few models use.

``mujoco.mjx`` imports its mesh helpers (``mujoco.mjx._src.mesh``: trimesh and SciPy's spatial
package, ~0.4 s of start-up) at the top of modules every model uses, though only models with box,
mesh or height-field geoms call them. :func:`import_mjx` registers that module to execute when a
name it defines is first read. (``importlib.util.LazyLoader`` would not do: an ``import`` that
finds the module reads its ``__spec__``, which executes it.) MuJoCo's files are not touched.
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
import types
from pathlib import Path

MESH_HELPERS = "mujoco.mjx._src.mesh"


def import_mjx():
    """``mujoco.mjx``, its mesh helpers imported on first use; MJX's warning that its optional
    warp implementation is missing is kept out of the console (we choose the implementation)."""
    if "mujoco.mjx" not in sys.modules:
        import_on_first_use(MESH_HELPERS)
    quiet = logging.getLogger("absl")
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        from mujoco import mjx
    finally:
        quiet.setLevel(level)
    return mjx


def import_on_first_use(name: str) -> bool:
    """Register module ``name`` (a plain ``.py`` file in an importable top-level package) to
    execute when a name it defines is first read (not its dunders, so ``import`` statements do
    not execute it; nor are its parents imported). Whether it is now registered."""
    if name in sys.modules:
        return False
    top, *inner = name.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None or not spec.submodule_search_locations or not inner:
        return False
    for folder in spec.submodule_search_locations:
        path = Path(folder, *inner[:-1], inner[-1] + ".py")
        if path.is_file():
            break
    else:
        return False
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location(name, path))
    module.__class__ = _ExecutedOnFirstUse
    sys.modules[name] = module
    return True


class _ExecutedOnFirstUse(types.ModuleType):
    """A module whose code runs when a name it does not hold yet is first read."""

    _lock = threading.RLock()

    def __getattr__(self, attr: str):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        with _ExecutedOnFirstUse._lock:
            if type(self) is _ExecutedOnFirstUse:
                self.__spec__.loader.exec_module(self)
                self.__class__ = types.ModuleType
        return getattr(self, attr)
