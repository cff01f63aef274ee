"""resolve_sim_settings: backend and device choice as a pure function of config and platform."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from isaacgymenvs_gmi.config import ConfigError, SimSettings, resolve_sim_settings

NO_GPU = {"cuda_available": False, "jax_platforms": ("cpu",), "warp_available": False}
GPU_JAX = {"cuda_available": True, "jax_platforms": ("gpu",), "warp_available": False}
GPU_JAX_CUDA = {"cuda_available": True, "jax_platforms": ("cpu", "cuda"), "warp_available": True}
GPU_TORCH_ONLY = {"cuda_available": True, "jax_platforms": ("cpu",), "warp_available": False}


def _cfg(**overrides: object) -> dict[str, object]:
    cfg: dict[str, object] = {
        "sim_device": "cuda:0",
        "rl_device": "cuda:0",
        "sim_backend": "auto",
        "mjx_impl": "jax",
        "assets_root": "",
    }
    cfg.update(overrides)
    return cfg


@pytest.mark.parametrize(
    "overrides, platform, expected",
    [
        # auto: mjx only when physics is on CUDA and JAX sees a GPU.
        ({}, NO_GPU, ("mujoco", "jax", "cpu", "cpu")),
        ({}, GPU_JAX, ("mjx", "jax", "cuda:0", "cuda:0")),
        ({}, GPU_JAX_CUDA, ("mjx", "jax", "cuda:0", "cuda:0")),
        ({}, GPU_TORCH_ONLY, ("mujoco", "jax", "cuda:0", "cuda:0")),
        ({"sim_device": "cpu"}, GPU_JAX, ("mujoco", "jax", "cpu", "cuda:0")),
        ({"sim_device": "cuda", "rl_device": "cuda:1"}, GPU_JAX, ("mjx", "jax", "cuda", "cuda:1")),
        ({"sim_device": "CUDA:2"}, GPU_JAX, ("mjx", "jax", "cuda:2", "cuda:0")),
        # explicit choices
        ({"sim_backend": "mujoco"}, GPU_JAX, ("mujoco", "jax", "cuda:0", "cuda:0")),
        ({"sim_backend": "mjx"}, NO_GPU, ("mjx", "jax", "cpu", "cpu")),
        (
            {"sim_backend": "mjx", "sim_device": "cpu"},
            GPU_TORCH_ONLY,
            ("mjx", "jax", "cpu", "cuda:0"),
        ),
        (
            {"sim_backend": "MJX", "mjx_impl": "warp"},
            GPU_JAX_CUDA,
            ("mjx", "warp", "cuda:0", "cuda:0"),
        ),
        # warp is only required when MJX actually runs
        ({"mjx_impl": "warp"}, NO_GPU, ("mujoco", "warp", "cpu", "cpu")),
    ],
)
def test_table(overrides, platform, expected):
    settings = resolve_sim_settings(_cfg(**overrides), **platform)
    assert isinstance(settings, SimSettings)
    assert (
        settings.backend,
        settings.mjx_impl,
        settings.sim_device,
        settings.rl_device,
    ) == expected


@pytest.mark.parametrize(
    "overrides, platform, key, fragments",
    [
        (
            {"sim_backend": "mjx"},
            GPU_TORCH_ONLY,
            "sim_backend",
            ["sim_device=cuda:0", "JAX sees: cpu", "install the 'gpu' extra"],
        ),
        (
            {"sim_backend": "mjx"},
            {**GPU_TORCH_ONLY, "jax_platforms": ()},
            "sim_backend",
            ["JAX sees: no devices"],
        ),
        ({"sim_backend": "mjx", "mjx_impl": "warp"}, GPU_JAX, "mjx_impl", ["warp", "'gpu' extra"]),
        ({"sim_backend": "mjx", "mjx_impl": "warp"}, NO_GPU, "mjx_impl", ["mjx_impl=jax"]),
        ({"sim_backend": "physx"}, GPU_JAX, "sim_backend", ["'auto', 'mujoco', 'mjx'"]),
        ({"mjx_impl": "torch"}, GPU_JAX, "mjx_impl", ["'jax', 'warp'"]),
        ({"sim_device": "gpu"}, GPU_JAX, "sim_device", ["'cpu', 'cuda' or 'cuda:N'"]),
        ({"rl_device": "cuda:x"}, GPU_JAX, "rl_device", ["'cpu', 'cuda' or 'cuda:N'"]),
        ({"rl_device": 0}, NO_GPU, "rl_device", ["'cpu', 'cuda' or 'cuda:N'"]),
        ({"assets_root": "/no/such/folder"}, NO_GPU, "assets_root", ["existing folder"]),
    ],
)
def test_errors(overrides, platform, key, fragments):
    with pytest.raises(ConfigError) as info:
        resolve_sim_settings(_cfg(**overrides), **platform)
    assert info.value.key == key
    assert str(info.value).startswith(f"{key}=")
    for fragment in fragments:
        assert fragment in str(info.value)


def test_cpu_fallback_warns_once(caplog):
    with caplog.at_level(logging.WARNING, logger="isaacgymenvs_gmi.config.sim"):
        settings = resolve_sim_settings(_cfg(), **NO_GPU)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "sim_device" in warnings[0].getMessage()
    assert "rl_device" in warnings[0].getMessage()
    assert (settings.sim_device, settings.rl_device) == ("cpu", "cpu")


@pytest.mark.parametrize(
    "overrides, platform",
    [({}, GPU_JAX), ({"sim_device": "cpu", "rl_device": "cpu"}, NO_GPU)],
)
def test_no_warning_when_nothing_moves(caplog, overrides, platform):
    with caplog.at_level(logging.WARNING, logger="isaacgymenvs_gmi.config.sim"):
        resolve_sim_settings(_cfg(**overrides), **platform)
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_assets_root(tmp_path: Path):
    assert resolve_sim_settings(_cfg(), **NO_GPU).assets_root is None
    settings = resolve_sim_settings(_cfg(assets_root=str(tmp_path)), **NO_GPU)
    assert settings.assets_root == str(tmp_path)


def test_missing_keys_use_upstream_defaults():
    settings = resolve_sim_settings({}, **GPU_JAX)
    assert settings == SimSettings("mjx", "jax", "cuda:0", "cuda:0", None)
    assert settings.on_gpu


def test_composed_config(compose_cfg):
    cfg = compose_cfg("task=Cartpole", "sim_backend=mujoco", "rl_device=cpu")
    settings = resolve_sim_settings(cfg, **GPU_JAX)
    assert settings == SimSettings("mujoco", "jax", "cuda:0", "cpu", None)
    assert not resolve_sim_settings(compose_cfg("sim_device=cpu"), **NO_GPU).on_gpu
