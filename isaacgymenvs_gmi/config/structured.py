"""Hydra's structured configs, made from the settings classes: one source of keys, types and
defaults.

:func:`schema_node` turns a :class:`~.schema.Settings` class into the node Hydra composes the
YAML onto, so ``--cfg job`` shows every key with its default and a wrongly typed value fails at
composition with Hydra's own message, naming the key. A key's node follows its kind: ``Int``:
int, ``Real``: float, ``Flag``: bool, ``Choice`` and ``Text``: str, ``Nested``: its settings'
own node; optional, ``auto``, a list or a kind of its own (a subclass with its own conversion):
Any, checked by the settings class when the run is planned.

The node is open (a DictConfig, not a dataclass), so a key it does not know still reaches the
settings class, which names the closest one. The Hydra plugin (``hydra_plugins.
isaacgymenvs_gmi_launcher``) registers ``gmi/schema`` (``gmi.*`` with ``gmi.async.*``) and
``pbt/schema``, which ``cfg/gmi/default.yaml`` and ``cfg/pbt/pbt_default.yaml`` extend, and
``hydra/launcher/gmi``.
"""

from __future__ import annotations

from typing import Any

from omegaconf import (
    AnyNode,
    BooleanNode,
    DictConfig,
    FloatNode,
    IntegerNode,
    OmegaConf,
    StringNode,
)

from .schema import Choice, Flag, Int, Kind, Nested, Real, Text, specs

PROVIDER = "isaacgymenvs_gmi"
_TYPED = {
    Int: IntegerNode,
    Real: FloatNode,
    Flag: BooleanNode,
    Choice: StringNode,
    Text: StringNode,
}


def value_node(kind: Kind, default: Any) -> Any:
    """What one key of ``kind`` holds in the schema: a typed node with ``default`` (see the
    module); a list or mapping default as it is (OmegaConf makes it a container)."""
    if isinstance(kind, Nested):
        return schema_node(kind.settings)
    if isinstance(default, tuple):
        return list(default)
    if isinstance(default, list | dict):
        return default
    node_type = _TYPED.get(type(kind), AnyNode)
    if getattr(kind, "optional", False) or getattr(kind, "auto", False):
        node_type = AnyNode
    return node_type(default)


def schema_node(settings: type, head: dict[str, Any] | None = None, **groups: type) -> DictConfig:
    """``settings``' keys with their defaults and node types, after ``head`` (keys of Hydra's,
    e.g. ``_target_``) and before a node for each of ``groups`` (key -> settings class:
    ``async`` for ``gmi``)."""
    node: dict[str, Any] = dict(head or {})
    node.update((key, value_node(kind, default)) for key, kind, default in specs(settings))
    node.update((key, schema_node(group)) for key, group in groups.items())
    return OmegaConf.create(node)


__all__ = ["PROVIDER", "schema_node", "value_node"]
