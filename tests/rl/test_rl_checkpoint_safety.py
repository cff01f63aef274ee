"""Checkpoints load as plain data only, and a wrong one is refused before a run starts.

One real Cartpole run (2 epochs, with a central value net) provides the checkpoint the tests
check, damage, relabel and play.
"""

from __future__ import annotations

import contextlib
import glob
import math
import os
import pickle
import shlex
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch
from hydra import compose, initialize_config_dir
from hydra.errors import Hydra14MigrationWarning
from omegaconf import DictConfig, OmegaConf
from rl_games.algos_torch import torch_ext

from isaacgymenvs_gmi.config import ConfigError, register_resolvers
from isaacgymenvs_gmi.launch import plan_run, run
from isaacgymenvs_gmi.patches import atomic_checkpoint, safe_checkpoint_load
from isaacgymenvs_gmi.rl.checkpoint_check import check_checkpoint

ROOT = Path(__file__).resolve().parents[2]
CRITIC = (
    "+train.params.config.central_value_config={minibatch_size:512,mini_epochs:2,"
    "learning_rate:5e-4,clip_value:true,normalize_input:true,network:{name:actor_critic,"
    "central_value:true,mlp:{units:[%s],activation:elu,d2rl:false,initializer:{name:default},"
    "regularizer:{name:None}}}}"
)
SMALL = ["num_envs=64", "train.params.config.minibatch_size=1024", "headless=True"]


def _compose(*overrides: str) -> DictConfig:
    register_resolvers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Hydra14MigrationWarning)
        with initialize_config_dir(config_dir=str(ROOT / "cfg"), version_base="1.1"):
            return compose("config", overrides=list(overrides))


def _check(path: str | Path, *overrides: str) -> None:
    """``check_checkpoint`` for the task and train config composed from ``overrides``."""
    cfg = _compose(*overrides)
    task_config = OmegaConf.to_container(cfg.task, resolve=True)
    train_params = OmegaConf.to_container(cfg.train, resolve=True)["params"]
    check_checkpoint(str(path), cfg.task_name, task_config, train_params)


class RunsCommand:
    """Unpickling this runs ``touch <marker>`` through ``os.system``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> str:
    """The last checkpoint of a 2-epoch Cartpole run with a central value net; a best
    checkpoint is saved after epoch 1, so rl-games holds ``last_mean_rewards`` as a numpy
    scalar (written as the Python number it holds)."""
    train_dir = tmp_path_factory.mktemp("runs")
    cfg = _compose(
        "task=Cartpole",
        "max_iterations=2",
        "train.params.config.save_best_after=1",
        f"train_dir={train_dir}",
        CRITIC % "32,32",
        *SMALL,
    )
    atomic_checkpoint.set_checkpoint_metadata(task="Cartpole")  # as the sync-PPO body does
    try:
        result = run(cfg, plan_run(cfg))
    finally:
        atomic_checkpoint.set_checkpoint_metadata()
    (last,) = glob.glob(os.path.join(result.experiment_dir, "nn", "last_*.pth"))
    return last


@contextlib.contextmanager
def _loader(safe: bool) -> Iterator[None]:
    """rl-games' loader patched (``safe``) or not, then as it was (runs apply the patch)."""
    was_safe = torch_ext.load_checkpoint is safe_checkpoint_load.load_checkpoint
    (safe_checkpoint_load.apply if safe else safe_checkpoint_load.revert)()
    try:
        yield
    finally:
        (safe_checkpoint_load.apply if was_safe else safe_checkpoint_load.revert)()


@pytest.fixture
def patched() -> Iterator[None]:
    with _loader(safe=True):
        yield


@pytest.fixture(params=["torch.save", "pickle protocol 2", "pickle protocol 5"])
def evil(request, tmp_path) -> tuple[Path, Path]:
    """(a crafted checkpoint whose unpickling would create ``marker``, marker)."""
    marker = tmp_path / "ran"
    path = tmp_path / "evil.pth"
    state = {"model": RunsCommand(marker), "epoch": 1}
    if request.param == "torch.save":
        torch.save(state, path)
    else:
        path.write_bytes(pickle.dumps(state, protocol=int(request.param[-1])))
    return path, marker


def test_the_crafted_checkpoint_runs_its_command_under_rl_games_own_loader(evil):
    path, marker = evil
    with _loader(safe=False), contextlib.suppress(Exception):
        torch_ext.load_checkpoint(str(path))  # fails once the command ran: no state dict left
    assert marker.exists()  # the threat is real, so the checks below mean something


def test_crafted_checkpoint_is_refused_without_running_anything(evil, patched):
    path, marker = evil
    for load in (
        lambda: torch_ext.load_checkpoint(str(path)),  # agents' and players' restore
        lambda: check_checkpoint(str(path), "Cartpole", {"env": {}}, {}),
        lambda: plan_run(_compose("task=Cartpole", "test=True", f"checkpoint={path}")),
    ):
        with pytest.raises(ConfigError) as e:
            load()
        assert e.value.key == "checkpoint"
        assert "refused: it holds code/objects that are not plain tensors" in str(e.value)
        assert "system" in str(e.value)  # names the global: posix.system
    assert not marker.exists()


@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda real, p: p.write_bytes(np.random.default_rng(0).bytes(4096)), "not a loadable"),
        (lambda real, p: p.write_bytes(real.read_bytes()[: real.stat().st_size // 2]), "truncated"),
        (lambda real, p: p.write_text("checkpoint: not really\n"), "a text file"),
        (lambda real, p: p.write_bytes(b""), "empty"),
        (lambda real, p: None, "no such file"),
        (lambda real, p: torch.save({"epoch": 3, "frame": 0}, p), "no 'model' state"),
        (lambda real, p: torch.save([torch.zeros(3)], p), "it holds a list"),
    ],
    ids=["random bytes", "truncated", "text", "empty", "missing", "no model", "a list"],
)
def test_files_that_are_not_checkpoints_are_refused(checkpoint, tmp_path, patched, make, why):
    path = tmp_path / "bad.pth"
    make(Path(checkpoint), path)
    with pytest.raises(ConfigError) as e:
        _check(path, "task=Cartpole")
    assert e.value.key == "checkpoint" and why in str(e.value), str(e.value)
    if why != "no 'model' state":  # rl-games' own restore hits the same reading
        with pytest.raises(ConfigError, match="checkpoint="):
            torch_ext.load_checkpoint(str(path))


def test_a_checkpoint_of_another_task_names_the_tensor_shapes_and_task(checkpoint):
    with pytest.raises(ConfigError) as e:
        _check(checkpoint, "task=Ant")
    assert e.value.key == "checkpoint"
    assert str(e.value).endswith(
        "running_mean_std.running_mean has shape (4,), Ant with this train config needs (60,); "
        "the checkpoint was trained on Cartpole"
    )


def test_a_central_value_net_of_another_shape_is_named(checkpoint):
    with pytest.raises(ConfigError) as e:
        _check(checkpoint, "task=Cartpole", CRITIC % "64,32")
    assert "central value net: model.a2c_network.actor_mlp.0.weight has shape (32, 4), " in str(
        e.value
    )
    assert "needs (64, 4); the checkpoint was trained on Cartpole" in str(e.value)


def test_the_right_checkpoint_passes_fast_and_records_its_task(checkpoint):
    state = safe_checkpoint_load.load_checkpoint(checkpoint)
    assert state["isaacgymenvs_gmi"] == {"task": "Cartpole"}
    # rl-games keeps its best reward as a numpy scalar; we write the Python number it holds,
    # so torch's default loader (weights_only=True, no allowlist) reads the file
    assert isinstance(state["last_mean_rewards"], float)
    assert torch.load(checkpoint)["last_mean_rewards"] == state["last_mean_rewards"]
    assert "assymetric_vf_nets" in state
    cfg = _compose("task=Cartpole", CRITIC % "32,32")
    task_config = OmegaConf.to_container(cfg.task, resolve=True)
    train_params = OmegaConf.to_container(cfg.train, resolve=True)["params"]
    check_checkpoint(checkpoint, "Cartpole", task_config, train_params)  # warm
    start = time.perf_counter()
    check_checkpoint(checkpoint, "Cartpole", task_config, train_params)
    assert time.perf_counter() - start < 0.5
    _check(checkpoint, "task=Cartpole")  # without a central value net: the actor alone


def test_an_older_checkpoint_holding_rl_games_numpy_scalar_still_loads(checkpoint, tmp_path):
    """Files written before (or by rl-games itself) hold the numpy float32: our loader's
    allowlist reads them."""
    old = {**safe_checkpoint_load.load_checkpoint(checkpoint), "last_mean_rewards": np.float32(7)}
    path = tmp_path / "older.pth"
    torch.save(old, path)
    loaded = safe_checkpoint_load.load_checkpoint(str(path))
    assert isinstance(loaded["last_mean_rewards"], np.float32) and loaded["last_mean_rewards"] == 7


def test_compiled_model_keys_load_as_rl_games_loads_them(checkpoint, tmp_path, patched):
    state = safe_checkpoint_load.load_checkpoint(checkpoint)
    compiled = dict(state)
    compiled["model"] = {f"_orig_mod.{k}": v for k, v in state["model"].items()}
    vf = state["assymetric_vf_nets"]
    compiled["assymetric_vf_nets"] = {
        k.replace("model.", "model._orig_mod.", 1): v for k, v in vf.items()
    }
    path = tmp_path / "compiled.pth"
    torch.save(compiled, path)
    loaded = torch_ext.load_checkpoint(str(path))
    assert list(loaded["model"]) == list(state["model"])
    assert list(loaded["assymetric_vf_nets"]) == list(vf)
    _check(path, "task=Cartpole", CRITIC % "32,32")


def test_play_and_resume_go_through_the_safe_loader(checkpoint, tmp_path):
    cfg = _compose("task=Cartpole", "test=True", f"checkpoint={checkpoint}", *SMALL)
    played = run(cfg, plan_run(cfg))
    assert torch_ext.load_checkpoint is safe_checkpoint_load.load_checkpoint  # applied by the run
    assert played.mean_reward is not None and math.isfinite(played.mean_reward)

    overrides = ["task=Cartpole", "max_iterations=3", f"train_dir={tmp_path}", CRITIC % "32,32"]
    cfg = _compose(*overrides, f"checkpoint={checkpoint}", *SMALL)
    resumed = run(cfg, plan_run(cfg))
    assert resumed.frames == 3 * 16 * 64  # continued from epoch 2 of the checkpoint
