"""The shipped config tree composes with IsaacGymEnvs' keys, defaults and interpolations."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from isaacgymenvs_gmi.config import GmiConfig

UPSTREAM_TOP_LEVEL = {
    "experiment": "",
    "num_envs": "",
    "seed": 42,
    "torch_deterministic": False,
    "max_iterations": "",
    "physics_engine": "physx",
    "pipeline": "gpu",
    "sim_device": "cuda:0",
    "rl_device": "cuda:0",
    "graphics_device_id": 0,
    "num_threads": 4,
    "solver_type": 1,
    "num_subscenes": 4,
    "test": False,
    "checkpoint": "",
    "sigma": "",
    "multi_gpu": False,
    "wandb_activate": False,
    "wandb_group": "",
    "wandb_entity": "",
    "wandb_project": "isaacgymenvs",
    "wandb_tags": [],
    "wandb_logcode_dir": "",
    "capture_video": False,
    "capture_video_freq": 1464,
    "capture_video_len": 100,
    "force_render": True,
    "headless": True,  # upstream: False (a viewer); there is none here, headless=False is named
}

PLUGIN_TOP_LEVEL = {
    "sim_backend": "auto",
    "mjx_impl": "jax",
    "assets_root": "",
    "train_dir": "runs",
}


def test_default_task_is_ant(compose_cfg):
    cfg = compose_cfg()
    assert cfg.task_name == "Ant"
    assert cfg.train.params.config.name == "Ant"


@pytest.mark.parametrize("key, value", sorted({**UPSTREAM_TOP_LEVEL, **PLUGIN_TOP_LEVEL}.items()))
def test_top_level_defaults(compose_cfg, key, value):
    cfg = compose_cfg("task=Cartpole")
    assert OmegaConf.to_container(cfg, resolve=True)[key] == value


def test_groups_present(compose_cfg):
    cfg = compose_cfg()
    assert cfg.pbt.enabled is False
    assert cfg.pbt.policy_idx == 0
    assert GmiConfig.from_node(cfg.gmi) == GmiConfig()


@pytest.mark.parametrize(
    "task, num_envs, max_epochs, horizon, minibatch, units",
    [  # IsaacGymEnvs' values
        ("Cartpole", 512, 100, 16, 8192, [32, 32]),
        ("Ant", 4096, 500, 16, 32768, [256, 128, 64]),
        ("Humanoid", 4096, 1000, 32, 32768, [400, 200, 100]),
        ("BallBalance", 4096, 250, 16, 8192, [128, 64, 32]),
        ("Anymal", 4096, 1000, 24, 32768, [256, 128, 64]),
        ("FrankaCabinet", 4096, 1500, 16, 8192, [256, 128, 64]),
        ("ShadowHand", 16384, 5000, 8, 32768, [512, 512, 256, 128]),
    ],
)
def test_task_and_train_values(compose_cfg, task, num_envs, max_epochs, horizon, minibatch, units):
    cfg = compose_cfg(f"task={task}")
    assert cfg.task_name == task
    assert cfg.task.name == task
    assert cfg.task.env.numEnvs == num_envs
    config = cfg.train.params.config
    assert config.num_actors == cfg.task.env.numEnvs
    assert config.name == task
    assert config.full_experiment_name == task
    assert config.max_epochs == max_epochs
    assert config.minibatch_size == minibatch
    assert config.horizon_length == horizon
    assert config.get("multi_gpu", False) is False  # upstream BallBalancePPO has no such key
    assert list(cfg.train.params.network.mlp.units) == units
    assert cfg.train.params.seed == 42
    assert cfg.wandb_name == task
    assert cfg.task.physics_engine == "physx"


def test_physx_interpolations(compose_cfg):
    cfg = compose_cfg("task=Ant")
    physx = cfg.task.sim.physx
    assert physx.num_threads == 4
    assert physx.solver_type == 1
    assert physx.num_subscenes == 4
    assert physx.use_gpu is True
    assert cfg.task.sim.use_gpu_pipeline is True


def test_cpu_overrides_flow_through_resolvers(compose_cfg):
    cfg = compose_cfg("task=Ant", "sim_device=cpu", "pipeline=CPU", "num_threads=2")
    assert cfg.task.sim.physx.use_gpu is False
    assert cfg.task.sim.use_gpu_pipeline is False
    assert cfg.task.sim.physx.num_threads == 2


@pytest.mark.parametrize("task", ["Cartpole", "Ant"])
def test_num_envs_override_propagates(compose_cfg, task):
    cfg = compose_cfg(f"task={task}", "num_envs=64")
    assert cfg.task.env.numEnvs == 64
    assert cfg.train.params.config.num_actors == 64


def test_experiment_seed_and_iterations_overrides(compose_cfg):
    cfg = compose_cfg("task=Cartpole", "experiment=run7", "seed=3", "max_iterations=11")
    config = cfg.train.params.config
    assert config.name == "run7"
    assert config.full_experiment_name == "run7"
    assert cfg.wandb_name == "run7"
    assert config.max_epochs == 11
    assert cfg.train.params.seed == 3


def test_checkpoint_switches_loading(compose_cfg):
    assert compose_cfg("task=Cartpole").train.params.load_checkpoint is False
    cfg = compose_cfg("task=Cartpole", "checkpoint=runs/x.pth")
    assert cfg.train.params.load_checkpoint is True
    assert cfg.train.params.load_path == "runs/x.pth"


def test_gmi_overrides(compose_cfg):
    cfg = compose_cfg("task=Ant", "gmi.per_gpu=3", "gmi.comm=har", "gmi.sm_percent=[30,30,40]")
    gmi = GmiConfig.from_node(cfg.gmi)
    assert gmi.per_gpu == 3
    assert gmi.comm == "har"
    assert gmi.sm_percent == (30.0, 30.0, 40.0)
