"""A pytree's structure as JSON and back, without pickle: what a program kept whole needs to
hand its outputs back in their shape (:mod:`.stored_programs`).

Node types are written by name and read back only if they are pytree types of modules already
imported from an allowed package (this one, the task's, ``mujoco.mjx``, ``jax``, the standard
library's containers); their static data may hold None, numbers, strings, tuples, lists, numpy
arrays and scalars, enums, and MJX's hashable array wrapper. Anything else cannot be written
(:class:`UnsupportedTree`), and such a program is simply not kept.
"""

from __future__ import annotations

import base64
import enum
import sys
from collections.abc import Iterable
from typing import Any

import jax
import numpy as np

LEAF = "*"
ALLOWED = ("builtins", "collections", "jax", "jaxlib", "mujoco.mjx", __name__.split(".")[0])
_WRAPPER = "mujoco.mjx._src.dataclasses:_NumPyArrayHashWrapper"


class UnsupportedTree(ValueError):
    """A structure (or static data) this codec does not write or read."""


def encode(treedef: Any) -> Any:
    """``treedef`` (a ``jax.tree_util.PyTreeDef``) as JSON-able data."""
    node = treedef.node_data()
    if node is None:
        return LEAF
    kind, static = node
    return {
        "type": _name(kind),
        "static": _encode_static(static),
        "children": [encode(child) for child in treedef.children()],
    }


def decode(data: Any, also_allowed: Iterable[str] = ()) -> Any:
    """The ``PyTreeDef`` ``data`` describes; ``also_allowed``: more packages whose types may
    appear (the task's)."""
    allowed = (*ALLOWED, *also_allowed)
    return jax.tree_util.tree_structure(_skeleton(data, allowed))


class _Leaf:
    """Stands for a leaf while the structure is rebuilt."""


def _skeleton(data: Any, allowed: tuple[str, ...]) -> Any:
    if data == LEAF:
        return _Leaf()
    if not isinstance(data, dict) or set(data) != {"type", "static", "children"}:
        raise UnsupportedTree(f"not a tree node: {str(data)[:80]}")
    kind = _type(data["type"], allowed)
    static = _decode_static(data["static"], allowed)
    children = [_skeleton(child, allowed) for child in data["children"]]
    if kind is tuple:
        return tuple(children)
    if kind is list:
        return children
    if kind is dict:
        return dict(zip(static, children, strict=True))
    if kind is type(None):
        return None
    if issubclass(kind, tuple) and hasattr(kind, "_fields"):  # a NamedTuple
        return kind(*children)
    from jax._src import tree_util

    entry = tree_util._registry.get(kind)
    if entry is None:
        raise UnsupportedTree(f"{data['type']} is not a registered pytree type")
    return entry.from_iter(static, children)


def _name(kind: type) -> str:
    name = f"{kind.__module__}:{kind.__qualname__}"
    if "<" in name:
        raise UnsupportedTree(f"{name} cannot be found by name")
    return name


def _type(name: str, allowed: tuple[str, ...]) -> type:
    module_name, _, qualname = name.partition(":")
    if not any(module_name == p or module_name.startswith(p + ".") for p in allowed):
        raise UnsupportedTree(f"{name}: not from an allowed package")
    if name == "builtins:NoneType":
        return type(None)
    found: Any = sys.modules.get(module_name)  # never imports anything on a file's word
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, type):
        raise UnsupportedTree(f"{name}: no such type imported")
    return found


def _encode_static(value: Any) -> Any:
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, enum.Enum):
        return {"enum": _name(type(value)), "value": _encode_static(value.value)}
    if isinstance(value, int | float):
        return {"number": type(value).__name__, "value": repr(value)}
    if isinstance(value, np.generic):
        return {"scalar": value.dtype.str, "value": repr(value.item())}
    if isinstance(value, np.ndarray):
        data = base64.b64encode(np.ascontiguousarray(value).tobytes()).decode()
        return {"array": value.dtype.str, "shape": list(value.shape), "data": data}
    if isinstance(value, tuple | list):
        return {type(value).__name__: [_encode_static(v) for v in value]}
    if f"{type(value).__module__}:{type(value).__qualname__}" == _WRAPPER:
        return {"wrapped": _encode_static(value.array)}
    raise UnsupportedTree(f"static data of type {type(value).__name__}")


def _decode_static(data: Any, allowed: tuple[str, ...]) -> Any:
    if data is None or isinstance(data, bool | str):
        return data
    if not isinstance(data, dict):
        raise UnsupportedTree(f"static data: {str(data)[:80]}")
    if "tuple" in data or "list" in data:
        items = [_decode_static(v, allowed) for v in next(iter(data.values()))]
        return tuple(items) if "tuple" in data else items
    if "number" in data:
        return float(data["value"]) if data["number"] == "float" else int(data["value"])
    if "scalar" in data:
        dtype = np.dtype(data["scalar"])
        return dtype.type(float(data["value"]) if dtype.kind in "fc" else int(data["value"]))
    if "array" in data:
        raw = base64.b64decode(data["data"])
        return np.frombuffer(raw, np.dtype(data["array"])).reshape(data["shape"]).copy()
    if "enum" in data:
        return _type(data["enum"], allowed)(_decode_static(data["value"], allowed))
    if "wrapped" in data:
        return _type(_WRAPPER, allowed)(_decode_static(data["wrapped"], allowed))
    raise UnsupportedTree(f"static data: {str(data)[:80]}")
