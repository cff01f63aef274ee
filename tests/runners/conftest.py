"""A trained checkpoint the runner tests share (sync, one process, ~10 s)."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.launch import plan_run, run
from tests.conftest import compose_config

NO_GPU = (False, ("cpu",), False)


@pytest.fixture(scope="session")
def trained_cartpole(tmp_path_factory) -> str:
    """A Cartpole checkpoint after 60 sync epochs (it balances: reward near 500)."""
    folder = tmp_path_factory.mktemp("trained")
    cfg = compose_config("task=Cartpole", "max_iterations=60", f"train_dir={folder}")
    result = run(cfg, plan_run(cfg, platform=NO_GPU))
    assert result.mean_reward > 400
    return result.checkpoint
