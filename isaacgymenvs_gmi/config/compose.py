"""``train.py``'s composed config, without running: :func:`compose_config` (public as
``isaacgymenvs_gmi.compose_config``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from omegaconf import DictConfig

from .resolvers import register_resolvers


@contextlib.contextmanager
def initialized_sources(*overrides: str, config_dir=None, config_name: str = "config"):
    """Hydra initialised over ``train.py``'s config sources for ``overrides`` (the user's first,
    the bundled ``cfg/`` last; inside a Hydra app, its state cleared first); yields them."""
    import warnings

    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra

    from isaacgymenvs_gmi.config.sources import (
        ConfigFlags,
        resolve_sources,
        split_config_flags,
        user_sources_first,
    )

    register_resolvers()
    given, args = split_config_flags(overrides)
    flags = ConfigFlags(
        config_path=str(config_dir) if config_dir is not None else given.config_path,
        config_name=config_name if config_name != "config" else given.config_name,
        config_dir=given.config_dir,
    )
    sources = resolve_sources(flags, args)
    if GlobalHydra.instance().is_initialized():  # inside a Hydra app: compose beside it
        GlobalHydra.instance().clear()
    with warnings.catch_warnings(), user_sources_first(sources):
        warnings.filterwarnings("ignore", message="(?s).*version_base")
        with initialize_config_dir(config_dir=sources.main, version_base="1.1"):
            yield sources


def compose_config(
    *overrides: str, config_dir: str | Path | None = None, config_name: str = "config"
) -> DictConfig:
    """``train.py``'s composed config for ``overrides`` (e.g. ``"task=Ant"``), without running,
    from ``train.py``'s sources: ``config_dir`` and ``config_name`` play ``--config-path`` and
    ``--config-name``; ``hydra.searchpath=[...]`` and ``--config-dir DIR`` may be among
    ``overrides``. Inside a Hydra app call it after the app has read what it needs of
    ``HydraConfig`` (Hydra's global state is cleared first)."""
    from hydra import compose

    with initialized_sources(*overrides, config_dir=config_dir, config_name=config_name) as src:
        return compose(config_name=src.config_name, overrides=src.hydra_args)
