"""Small checkers shared by the typed config builders; each raises ConfigError naming the key."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from omegaconf import DictConfig, ListConfig, OmegaConf

from .errors import ConfigError, one_of


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


def check_int(key: str, value: Any, *, minimum: int) -> int:
    """An integer ``>= minimum``. Digit strings are accepted; bools and floats are not."""
    constraint = f"must be an integer >= {minimum}"
    if isinstance(value, bool):
        raise ConfigError(key, value, constraint)
    if isinstance(value, str):
        text = value.strip()
        if not text.lstrip("+-").isdigit():
            raise ConfigError(key, value, constraint)
        number = int(text)
    elif isinstance(value, int):
        number = value
    else:
        raise ConfigError(key, value, constraint)
    if number < minimum:
        raise ConfigError(key, value, constraint)
    return number


def check_flag(key: str, value: Any) -> bool:
    """A boolean, as YAML and Hydra's command line give one (``true``/``false``)."""
    value = to_plain(value)
    if not isinstance(value, bool):
        raise ConfigError(key, value, "must be true or false")
    return value


def check_choice(key: str, value: Any, allowed: tuple[str, ...]) -> str:
    """One of ``allowed``, compared case-insensitively; returns the canonical spelling."""
    if isinstance(value, str):
        lowered = value.strip().lower()
        for choice in allowed:
            if choice.lower() == lowered:
                return choice
    raise ConfigError(key, value, one_of(allowed))


def check_percent(key: str, value: Any) -> float:
    """A real number in (0, 100]."""
    constraint = "must be a number in (0, 100]"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(key, value, constraint)
    number = float(value)
    if not math.isfinite(number) or not 0.0 < number <= 100.0:
        raise ConfigError(key, value, constraint)
    return number


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
