"""Reading config nodes: plain values, dotted lookups, mappings and their known keys. What a
value may be is :mod:`.schema`'s to say."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from .errors import ConfigError


def to_plain(node: Any) -> Any:
    """Resolve an OmegaConf node into plain Python containers; other values pass through."""
    if isinstance(node, DictConfig | ListConfig):
        return OmegaConf.to_container(node, resolve=True)
    return node


def select(cfg: Any, key: str, default: Any = None) -> Any:
    """Value at dotted ``key`` in a DictConfig or nested mapping (resolved), else ``default``.

    Only the selected value is resolved, so a broken interpolation elsewhere does not matter.
    """
    if isinstance(cfg, DictConfig):
        return to_plain(OmegaConf.select(cfg, key, default=default, throw_on_missing=True))
    node: Any = cfg
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return to_plain(node)


def as_mapping(key: str, node: Any) -> dict[str, Any]:
    """The node as a plain dict; ``None`` counts as empty."""
    node = to_plain(node)
    if node is None:
        return {}
    if not isinstance(node, Mapping):
        raise ConfigError(key, node, "must be a mapping")
    return dict(node)


def check_known_keys(prefix: str, given: Mapping[str, Any], known: tuple[str, ...]) -> None:
    """Reject keys under ``prefix`` that are not in ``known`` (with the closest known ones)."""
    from .suggest import close

    for name in given:
        if name not in known:
            near = close(str(name), known)
            hint = f"; did you mean {' or '.join(f'{prefix}.{k}' for k in near)}?" if near else ""
            raise ConfigError(
                f"{prefix}.{name}",
                given[name],
                f"unknown key; known keys under {prefix}: " + ", ".join(known) + hint,
            )
