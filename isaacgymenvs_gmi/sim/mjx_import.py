"""Import MJX without what only a few models use.

``mujoco.mjx`` imports its mesh helpers (``mujoco.mjx._src.mesh``) at the top of its collision
and model-transfer modules; they import trimesh and SciPy's spatial package, about 0.4 s of a
start that otherwise takes a few seconds, though only models with box, mesh or height-field
geoms ever call them (Ant, Humanoid, ... never do). :func:`import_mjx` registers that module to
execute when a name it defines is first read, so the models that need it pay for it when they
first call it, and the others never do. (The standard library's ``LazyLoader`` would not do:
an ``import`` statement that finds the module reads its ``__spec__``, which executes it.)
MuJoCo's files are not touched.
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
    """Register module ``name`` (a plain ``.py`` file inside an importable top-level package)
    so that it executes when an attribute it defines is first read; its dunders (``__spec__``,
    ``__file__``, ...) read without executing it, so ``import`` statements naming it do not
    either. Its parent packages are not imported. Whether it is now registered (False: already
    imported, or not found)."""
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
