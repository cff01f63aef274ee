"""A project laid out as an IsaacGymEnvs fork (upstream's file names, its own values) trains with
its own values, however its configs are named: ``hydra.searchpath``, ``--config-dir``, or its own
primary ``config.yaml`` through ``--config-path`` (completed with the ``gmi`` group, so
``gmi.per_gpu=2`` works as typed). Proven from the run: envs per GMI and the frames of an epoch
(envs x horizon x GMIs) in the checkpoint it writes."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import torch

from tests.helpers import assert_ok, run_train

ROOT = Path(__file__).resolve().parents[2]
FORK_ENVS, FORK_HORIZON, FORK_MINIBATCH = 48, 8, 384  # bundled Cartpole: 512 envs, horizon 16


@pytest.fixture(scope="module")
def fork(tmp_path_factory) -> Path:
    """<project>/cfg with config.yaml (upstream's shape: no gmi group, none of our keys),
    task/Cartpole.yaml and train/CartpolePPO.yaml edited in place, as forks do."""
    cfg = tmp_path_factory.mktemp("fork") / "cfg"
    (cfg / "task").mkdir(parents=True)
    (cfg / "train").mkdir()
    task = (ROOT / "cfg" / "task" / "Cartpole.yaml").read_text()
    task = re.sub(r"(numEnvs: \$\{resolve_default:)\d+", rf"\g<1>{FORK_ENVS}", task)
    (cfg / "task" / "Cartpole.yaml").write_text(task)
    train = (ROOT / "cfg" / "train" / "CartpolePPO.yaml").read_text()
    train = re.sub(r"(?m)^(\s+horizon_length:).*$", rf"\1 {FORK_HORIZON}", train)
    train = re.sub(r"(?m)^(\s+minibatch_size:).*$", rf"\1 {FORK_MINIBATCH}", train)
    (cfg / "train" / "CartpolePPO.yaml").write_text(train)
    primary = (ROOT / "cfg" / "config.yaml").read_text()
    primary = primary.replace("  - gmi: default\n", "").replace("  - plugin: defaults\n", "")
    assert "- gmi:" not in primary and "- plugin:" not in primary
    (cfg / "config.yaml").write_text(primary)
    return cfg


def _train(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    runs = tmp_path / "runs"
    proc = run_train(
        "task=Cartpole", "max_iterations=1", *args, f"train_dir={runs}", cwd=tmp_path, timeout_s=240
    )
    assert_ok(proc)
    (checkpoint,) = runs.glob("*/nn/last_*.pth")
    return proc, torch.load(checkpoint, map_location="cpu", weights_only=False)


@pytest.mark.parametrize("way", ["searchpath", "config-dir", "config-path"])
def test_a_fork_trains_with_its_own_values(tmp_path, fork, way):
    source = {
        "searchpath": [f"hydra.searchpath=[file://{fork}]"],
        "config-dir": ["--config-dir", str(fork)],
        "config-path": ["--config-path", str(fork), "--config-name", "config"],
    }[way]
    # with its own config.yaml, also the +gmi.per_gpu=2 users typed before the group was added
    gmis = "+gmi.per_gpu=2" if way == "config-path" else "gmi.per_gpu=2"
    proc, state = _train(tmp_path, *source, gmis)
    assert f"{FORK_ENVS} envs per GMI x 2 GMIs" in proc.stderr
    assert state["frame"] == FORK_ENVS * FORK_HORIZON * 2  # one epoch of the fork's horizon
    line = next(x for x in proc.stderr.splitlines() if x.startswith("configs: "))
    assert f"task Cartpole from {fork / 'task' / 'Cartpole.yaml'}" in line
    assert f"train CartpolePPO from {fork / 'train' / 'CartpolePPO.yaml'}" in line


def test_without_user_configs_the_bundled_ones_are_named(tmp_path):
    proc, state = _train(tmp_path, "num_envs=32", "train.params.config.minibatch_size=512")
    assert "configs: task Cartpole from bundled task/Cartpole.yaml; " in proc.stderr
    assert state["frame"] == 32 * 16


def test_the_search_order_puts_every_user_source_before_the_bundled_folder(tmp_path, fork):
    other = tmp_path / "more"
    (other / "task").mkdir(parents=True)
    proc = run_train(
        "--config-dir",
        str(fork),
        f"hydra.searchpath=[file://{other}]",
        "--info",
        "searchpath",
        cwd=tmp_path,
        timeout_s=60,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [r for r in proc.stdout.splitlines() if "file://" in r]
    assert [r.split("|")[1].strip() for r in rows] == ["user", "user", "main"]
    assert str(fork) in rows[0] and str(other) in rows[1]


def test_a_primary_configs_own_searchpath_comes_before_the_bundled_folder(tmp_path):
    from isaacgymenvs_gmi.config.sources import ConfigFlags, bundled_config_dir, resolve_sources

    own, listed, typed = tmp_path / "own", tmp_path / "listed", tmp_path / "typed"
    for folder in (own, listed, typed):
        folder.mkdir()
    (own / "config.yaml").write_text(f"hydra:\n  searchpath: [file://{listed}]\n")
    bundled = f"file://{bundled_config_dir()}"
    sources = resolve_sources(ConfigFlags(config_path=str(own)), ["task=Ant"])
    assert sources.entries == (f"file://{own}", f"file://{listed}", bundled)
    assert sources.foreign_primary  # no gmi group in its defaults: completed with ours
    assert sources.hydra_args[:2] == ["+gmi=default", "+plugin=defaults"]
    # a searchpath typed on the command line replaces the primary config's, as in Hydra
    typed_arg = f"hydra.searchpath=[file://{typed}]"
    sources = resolve_sources(ConfigFlags(config_path=str(own)), ["task=Ant", typed_arg])
    assert sources.entries == (f"file://{own}", f"file://{typed}", bundled)
    assert typed_arg not in sources.hydra_args  # given to Hydra as search path entries instead
