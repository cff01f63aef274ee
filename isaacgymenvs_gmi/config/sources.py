"""Where configs come from: the user's sources first, the bundled ``cfg/`` as the fallback.

A fork of IsaacGymEnvs keeps upstream's file names (``task/Ant.yaml``) with its own values, and
Hydra alone would search our config folder before ``--config-dir`` and ``hydra.searchpath``: a
fork's ``Ant.yaml`` would lose, silently. Here the search order is, first match wins:

1. the primary config folder the user names (``--config-path``; relative to the current folder);
2. ``--config-dir``;
3. ``hydra.searchpath`` (from the command line, else from the primary ``config.yaml``);
4. the bundled ``cfg/``, which stays Hydra's primary config folder; a search path plugin puts
   the user's folders before it (:func:`user_sources_first`).

A primary config that is not ours is completed with the ``gmi`` group and the plugin's
top-level keys (``plugin/defaults.yaml``), so ``gmi.per_gpu=2`` works as typed.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import ConfigError

BUNDLED_NAME = "bundled"  # how the bundled folder is named in messages
_FLAGS = {  # Hydra's flags that name config sources, long and short
    "--config-path": "config_path",
    "-cp": "config_path",
    "--config-name": "config_name",
    "-cn": "config_name",
    "--config-dir": "config_dir",
    "-cd": "config_dir",
}
_PLUGIN_GROUPS = ("gmi", "plugin")  # what a foreign primary config is completed with


def bundled_config_dir() -> Path:
    """The bundled ``cfg/`` folder: package data of an installed wheel, or a checkout's."""
    try:
        spec = importlib.util.find_spec("isaacgymenvs_gmi.cfg")
    except ModuleNotFoundError:
        spec = None
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            if (Path(location) / "config.yaml").is_file():
                return Path(location)
    return Path(__file__).resolve().parents[2] / "cfg"  # a checkout on the path, not installed


@dataclass(frozen=True)
class ConfigFlags:
    """Hydra's source flags as typed: ``--config-path``, ``--config-name``, ``--config-dir``."""

    config_path: str | None = None
    config_name: str = "config"
    config_dir: str | None = None


def split_config_flags(argv: Sequence[str]) -> tuple[ConfigFlags, list[str]]:
    """``argv`` -> (the source flags, every other argument in order)."""
    found: dict[str, str] = {}
    rest: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        name, sep, value = arg.partition("=")
        if name in _FLAGS and (sep or i + 1 < len(args)):
            if not sep:
                i += 1
                value = args[i]
            found[_FLAGS[name]] = value
        else:
            rest.append(arg)
        i += 1
    return ConfigFlags(**found), rest


def _as_entry(path: str) -> str:
    """A folder as a Hydra search path entry (``file://`` absolute, or ``pkg://`` as given)."""
    if path.startswith(("pkg://", "file://")):
        return path
    return f"file://{os.path.abspath(path)}"


def _entry_dir(entry: str) -> Path | None:
    """The folder behind a search path entry, or None where it cannot be resolved."""
    if entry.startswith("file://"):
        return Path(os.path.abspath(entry[len("file://") :]))
    if entry.startswith("pkg://"):
        name = entry[len("pkg://") :].replace("/", ".")
        try:
            spec = importlib.util.find_spec(name)
        except (ModuleNotFoundError, ValueError):
            return None
        locations = list(spec.submodule_search_locations or []) if spec else []
        return Path(locations[0]) if locations else None
    return Path(os.path.abspath(entry))


def _is_override(arg: str) -> bool:
    return "=" in arg and not arg.startswith("-")


def _searchpath_override(args: Sequence[str]) -> tuple[list[str] | None, list[str]]:
    """(the entries of a ``hydra.searchpath=[...]`` override or None, the other arguments)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    found, rest = None, []
    for arg in args:
        if _is_override(arg) and arg.lstrip("+~").split("=", 1)[0] == "hydra.searchpath":
            value = OverridesParser.create().parse_overrides([arg])[0].value()
            found = [str(v) for v in (value or [])]
        else:
            rest.append(arg)
    return found, rest


def _read_yaml(path: Path) -> dict:
    try:
        loaded = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _names_group(defaults: object, group: str) -> bool:
    """Whether a defaults list selects ``group`` (``- gmi: default``, ``- /gmi: x``, ...)."""
    return any(
        isinstance(item, dict)
        and any(str(k).lstrip("/").removeprefix("optional ").strip() == group for k in item)
        for item in (defaults if isinstance(defaults, list) else [])
    )


@dataclass(frozen=True)
class ConfigSources:
    """The resolved search order and what Hydra is given to follow it."""

    entries: tuple[str, ...]  # search order, first match wins; the bundled folder last
    config_name: str
    primary_file: Path | None  # the primary config.yaml that will be used
    foreign_primary: bool  # the primary config is the user's and lacks the plugin's keys
    hydra_args: list[str] = field(default_factory=list)  # the command line to hand Hydra
    source_args: tuple[str, ...] = ()  # the flags and searchpath that name these sources

    @property
    def main(self) -> str:
        """Hydra's primary config folder: the bundled one (:func:`user_sources_first`)."""
        return str(bundled_config_dir())

    @property
    def user_entries(self) -> tuple[str, ...]:
        """The user's folders, in search order (the bundled one is Hydra's primary folder)."""
        bundled = _as_entry(str(bundled_config_dir()))
        return tuple(e for e in self.entries if e != bundled)

    def origin(self, group: str, choice: str) -> str:
        """Where ``<group>/<choice>.yaml`` is taken from: a path, or ``bundled <group>/...``."""
        bundled = bundled_config_dir()
        for entry in self.entries:
            folder = _entry_dir(entry)
            path = folder / group / f"{choice}.yaml" if folder else None
            if path is not None and path.is_file():
                if folder == bundled:
                    return f"{BUNDLED_NAME} {group}/{choice}.yaml"
                return str(path)
        return f"{group}/{choice}.yaml (not found)"


def resolve_sources(flags: ConfigFlags, args: Sequence[str]) -> ConfigSources:
    """The search order for ``flags`` and ``args`` (the rest of ``train.py``'s command line:
    overrides and Hydra's other flags), and the command line that makes Hydra follow it."""
    bundled = _as_entry(str(bundled_config_dir()))
    searchpath, rest = _searchpath_override(args)
    searchpath_args = [a for a in args if a not in rest]  # hydra.searchpath=[...], as given
    user = [_as_entry(path) for path in (flags.config_path, flags.config_dir) if path]
    primary = _find(user + [bundled], f"{flags.config_name}.yaml")
    primary_cfg = _read_yaml(primary) if primary is not None else {}
    if searchpath is None:  # the primary config.yaml's own hydra.searchpath, if it has one
        listed = (primary_cfg.get("hydra") or {}).get("searchpath")
        searchpath = [str(v) for v in listed] if isinstance(listed, list) else []
    for entry in searchpath:  # Hydra would skip a missing one silently
        folder = _entry_dir(entry)
        if folder is None or not folder.is_dir():
            raise ConfigError(
                "hydra.searchpath", entry, "names no folder (file://...) or package (pkg://...)"
            )
    user += [e for e in searchpath if e not in user]
    entries = [*user, bundled] if bundled not in user else user  # bundled last, or where named
    # the primary may be found in a searchpath entry too (Hydra looks it up in the full path)
    primary = _find(entries, f"{flags.config_name}.yaml")
    primary_cfg = _read_yaml(primary) if primary is not None else {}
    bundled_primary = primary is not None and primary.parent == bundled_config_dir()
    foreign = primary is not None and not bundled_primary
    foreign = foreign and not _names_group(primary_cfg.get("defaults"), "gmi")
    added: list[str] = []
    if foreign:
        added, rest = _completed(rest), _workarounds_dropped(rest)
    # added overrides go where the user's overrides start, so argparse sees one run of them
    at = next((i for i, a in enumerate(rest) if _is_override(a)), len(rest))
    hydra_args = [*rest[:at], *added, *rest[at:]]
    named = [
        *(["--config-path", flags.config_path] if flags.config_path else []),
        *(["--config-name", flags.config_name] if flags.config_name != "config" else []),
        *(["--config-dir", flags.config_dir] if flags.config_dir else []),
        *searchpath_args,
    ]
    return ConfigSources(
        tuple(entries), flags.config_name, primary, foreign, hydra_args, tuple(named)
    )


def _find(entries: Sequence[str], name: str) -> Path | None:
    for entry in entries:
        folder = _entry_dir(entry)
        if folder is not None and (folder / name).is_file():
            return folder / name
    return None


def _completed(args: list[str]) -> list[str]:
    """For a foreign primary config: the plugin's groups with their defaults (unless picked)."""
    picked = {a.lstrip("+").split("=", 1)[0] for a in args if _is_override(a)}
    defaults = {"gmi": "+gmi=default", "plugin": "+plugin=defaults"}
    return [d for g, d in defaults.items() if g not in picked]


def _workarounds_dropped(args: list[str]) -> list[str]:
    """``+gmi.per_gpu=2`` (the workaround for a config without ``gmi``) as ``gmi.per_gpu=2``:
    the group is there now, and appending to it would fail."""
    out = []
    for a in args:
        key = a.lstrip("+").split("=", 1)[0]
        plain = a.startswith("+") and not a.startswith("++") and _is_override(a)
        out.append(a[1:] if plain and key.split(".")[0] in _PLUGIN_GROUPS else a)
    return out


_ACTIVE: ConfigSources | None = None  # the sources, while user_sources_first() is active


@contextlib.contextmanager
def user_sources_first(sources: ConfigSources) -> Iterator[None]:
    """While active, Hydra searches ``sources``' user folders before its primary folder (the
    bundled one). Wrap ``hydra.main`` or ``initialize_config_dir`` + ``compose`` in it."""
    global _ACTIVE
    from hydra.core.plugins import Plugins

    Plugins.instance().register(_plugin_class())
    previous, _ACTIVE = _ACTIVE, sources
    try:
        yield
    finally:
        _ACTIVE = previous


def active_source_args() -> list[str]:
    """The command-line flags that name the config sources in use (for a process that must
    compose the same configs: a sweep's jobs); none outside :func:`user_sources_first`."""
    return list(_ACTIVE.source_args) if _ACTIVE is not None else []


@functools.cache
def _plugin_class() -> type:
    from hydra.core.config_search_path import ConfigSearchPath, SearchPathQuery
    from hydra.plugins.search_path_plugin import SearchPathPlugin

    class UserSourcesFirst(SearchPathPlugin):
        """Hydra search path plugin: the user's folders before the primary (bundled) one."""

        def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
            for entry in _ACTIVE.user_entries if _ACTIVE is not None else ():
                search_path.prepend("user", entry, anchor=SearchPathQuery(provider="main"))

    return UserSourcesFirst
