"""Task/train files written for IsaacGymEnvs compose unchanged through our config.yaml.

The files below are written in the upstream style (custom resolvers, PhysX blocks, relative
interpolations up to the top-level keys) under new names, and found through
``hydra.searchpath`` the way a user would point at an existing IsaacGymEnvs ``cfg`` folder.
"""

from __future__ import annotations

from pathlib import Path

from isaacgymenvs_gmi.config import (
    GmiConfig,
    RunSettings,
    ignored_physx_keys,
    resolve_sim_settings,
)


def _searchpath(path: Path) -> str:
    return f"hydra.searchpath=[file://{path}]"


def test_upstream_style_pair_loads(compose_cfg, upstream_dir):
    cfg = compose_cfg(_searchpath(upstream_dir), "task=MyCartpole")
    assert cfg.task_name == "MyCartpole"
    assert cfg.task.env.numEnvs == 256
    assert cfg.task.sim.use_gpu_pipeline is True
    assert cfg.task.sim.physx.use_gpu is True
    assert cfg.task.sim.physx.num_threads == 4
    config = cfg.train.params.config
    assert config.num_actors == 256
    assert config.name == "MyCartpole"
    assert config.max_epochs == 30
    assert config.defer_summaries_sec == 5
    assert cfg.wandb_name == "MyCartpole"
    assert cfg.train.params.load_checkpoint is False
    # Our own groups are still there alongside the user's files.
    assert GmiConfig.from_node(cfg.gmi).per_gpu == 1


def test_upstream_style_pair_with_overrides(compose_cfg, upstream_dir):
    cfg = compose_cfg(
        _searchpath(upstream_dir),
        "task=MyCartpole",
        "num_envs=32",
        "pipeline=cpu",
        "sim_device=cpu",
        "experiment=mine",
        "max_iterations=7",
        "gmi.per_gpu=2",
    )
    assert cfg.task.env.numEnvs == 32
    assert cfg.train.params.config.num_actors == 32
    assert cfg.task.sim.use_gpu_pipeline is False
    assert cfg.task.sim.physx.use_gpu is False
    assert cfg.train.params.config.name == "mine"
    assert cfg.train.params.config.max_epochs == 7
    assert GmiConfig.from_node(cfg.gmi).per_gpu == 2


def test_upstream_style_task_with_defaults_list(compose_cfg, upstream_dir):
    cfg = compose_cfg(_searchpath(upstream_dir), "task=MyCartpoleVariant")
    assert cfg.task_name == "MyCartpoleVariant"
    assert cfg.task.env.numEnvs == 128
    assert cfg.task.env.maxEffort == 400.0
    assert cfg.train.params.config.num_actors == 128


def test_upstream_style_pair_passes_plugin_checks(compose_cfg, upstream_dir):
    cfg = compose_cfg(_searchpath(upstream_dir), "task=MyCartpole")
    batch = RunSettings.from_cfg(cfg).check_batch(cfg.task_name, cfg.task.env.numEnvs)
    assert batch == 16 * 256
    settings = resolve_sim_settings(
        cfg, cuda_available=False, jax_platforms=("cpu",), warp_available=False
    )
    assert (settings.backend, settings.sim_device) == ("mujoco", "cpu")
    ignored = ignored_physx_keys(cfg)
    assert "task.sim.physx" in ignored
    assert "task.env.asset.assetRoot" in ignored
