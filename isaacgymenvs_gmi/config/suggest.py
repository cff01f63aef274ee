"""``did you mean ...`` for a typo on the command line: a config choice that does not exist
(``task=Antt``) or a key the config lacks (``gmi.per_gppu=3``). Hydra refuses both with its own
message; :func:`suggestions` adds the closest names from the same config sources, composing only
the choices that exist, and never raises.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

GROUPS = ("task", "train", "pbt")  # config groups a user picks on train.py's command line


def close(word: str, choices: Iterable[str]) -> list[str]:
    """Up to three of ``choices`` close to ``word``, closest first."""
    return difflib.get_close_matches(word, sorted(set(choices)), n=3, cutoff=0.6)


def _did_you_mean(given: str, found: list[str]) -> str:
    return f"did you mean {' or '.join(found)}? ({given} is not known)"


def key_suggestions(cfg: DictConfig, key: str) -> list[str]:
    """Dotted keys of ``cfg`` close to ``key`` (one that ``cfg`` lacks): siblings under its
    deepest existing parent first, else any key of ``cfg`` at the same depth."""
    prefix, _, name = key.rpartition(".")
    parent = OmegaConf.select(cfg, prefix, default=None) if prefix else cfg
    if isinstance(parent, DictConfig):
        near = close(name, [str(k) for k in parent])
        if near:
            return [f"{prefix}.{k}" if prefix else k for k in near]
    same_depth = [k for k in _dotted_keys(cfg) if k.count(".") == key.count(".")]
    return close(key, same_depth)


def _dotted_keys(node: Any, prefix: str = "") -> list[str]:
    out = []
    if isinstance(node, DictConfig):
        for k in node:
            path = f"{prefix}.{k}" if prefix else str(k)
            out.append(path)
            out.extend(_dotted_keys(node._get_node(k), path))
    return out


def suggestions(args: Sequence[str]) -> list[str]:
    """``did you mean`` lines for the overrides in ``args`` (``train.py``'s arguments) that
    name a config option or key that does not exist; [] where there is nothing to suggest."""
    try:
        return _suggestions(list(args))
    except Exception:  # noqa: BLE001 - a hint must never hide Hydra's own message
        return []


def _suggestions(args: list[str]) -> list[str]:
    from .compose import compose_config

    overrides = [a for a in args if "=" in a and not a.startswith("-")]
    flags = [a for a in args if a.startswith("-") or a.startswith("hydra.searchpath")]
    lines, kept = [], []
    options = _group_options(flags)
    for override in overrides:
        key, _, value = override.partition("=")
        if key not in GROUPS or options.get(key) is None:
            continue
        unknown = [v for v in value.split(",") if v not in options[key]]  # a sweep lists several
        for v in unknown:
            found = close(v, options[key])
            if found:
                lines.append(_did_you_mean(f"{key}={v}", [f"{key}={f}" for f in found]))
        if not unknown and "," not in value:
            kept.append(override)
    cfg = compose_config(*flags, *kept)
    for override in overrides:
        key = override.partition("=")[0]
        if key in GROUPS or "/" in key or key.startswith(("+", "~", "hydra")):
            continue  # a group choice, an addition or deletion, or Hydra's own settings
        if OmegaConf.select(cfg, key, default=_MISSING) is _MISSING:
            found = key_suggestions(cfg, key)
            if found:
                lines.append(_did_you_mean(key, found))
    return lines


_MISSING = object()


def _group_options(flags: list[str]) -> dict[str, list[str]]:
    """The options of each of :data:`GROUPS` in the config sources ``flags`` name."""
    from hydra.core.global_hydra import GlobalHydra

    from .compose import initialized_sources

    with initialized_sources(*flags):
        loader = GlobalHydra.instance().config_loader()
        return {g: loader.get_group_options(g) for g in GROUPS}
