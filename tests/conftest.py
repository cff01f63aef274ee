"""Fixtures for composing the project's Hydra config tree in tests."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.errors import Hydra14MigrationWarning
from omegaconf import DictConfig

from isaacgymenvs_gmi.config import register_resolvers

CFG_DIR = Path(__file__).resolve().parents[1] / "cfg"

Compose = Callable[..., DictConfig]


@pytest.fixture
def compose_cfg() -> Compose:
    """``compose_cfg(*overrides, config_dir=CFG_DIR)`` -> the composed top-level config.

    Uses ``version_base="1.1"`` like the training entry point (upstream behaviour).
    """
    register_resolvers()

    def _compose(*overrides: str, config_dir: Path = CFG_DIR) -> DictConfig:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Hydra14MigrationWarning)
            with initialize_config_dir(config_dir=str(config_dir), version_base="1.1"):
                return compose(config_name="config", overrides=list(overrides))

    return _compose
