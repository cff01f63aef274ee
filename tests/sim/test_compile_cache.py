"""The persistent compile cache: a second run loads every program (the big ones whole, not even
traced) and compiles none, and trains the same; an entry written for another CPU is never read
(the same runs, one more);
``off`` writes nothing. The warm runs also switch ``gmi.debug.sync`` on (device waits after every
env step and collective), which must change nothing but the speed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.gmi import GmiConfig
from isaacgymenvs_gmi.sim import compile_cache
from tests.helpers import assert_ok, run_train

ROOT = Path(__file__).resolve().parents[2]
COUNTS = re.compile(
    r"XLA programs: (?:(\d+) loaded whole \(not lowered\), )?(\d+) loaded from the compile cache, "
    r"(\d+) compiled"
)
OTHERS = re.compile(r"the other 2 GMIs: (?:(\d+) loaded whole, )?(\d+) loaded, (\d+) compiled")


def _counts(match: re.Match | None) -> tuple[int, int, int]:
    """(loaded whole, loaded from the cache, compiled)."""
    assert match is not None
    return tuple(int(x or 0) for x in match.groups())


def _mjx_cartpole(tmp_path: Path, runs: Path, cache: Path, *extra: str, env=None):
    """``train.py``: MJX Cartpole, 16 envs, with the compile cache ``cache`` (finished run)."""
    proc = run_train(
        "task=Cartpole",
        "sim_backend=mjx",
        "num_envs=16",
        "train.params.config.minibatch_size=256",
        f"gmi.compile_cache={cache}",
        f"train_dir={runs}",
        *extra,
        cwd=tmp_path,
        env=env,
    )
    assert_ok(proc)
    return proc


def _train(tmp_path: Path, name: str, cache: Path, fingerprint: str | None = None, *extra: str):
    """A 2-epoch run; returns (loaded whole, loaded, compiled, the final weights)."""
    env = {} if fingerprint is None else {compile_cache.CPU_FINGERPRINT_ENV: fingerprint}
    runs = tmp_path / name
    proc = _mjx_cartpole(tmp_path, runs, cache, "max_iterations=2", *extra, env=env)
    whole, loaded, compiled = _counts(COUNTS.search(proc.stderr))
    assert re.search(r"start-up [\d.]+ s to the first epoch: imports [\d.]+ s, ", proc.stderr)
    (checkpoint,) = runs.glob("*/nn/last_*.pth")
    weights = torch.load(checkpoint, map_location="cpu", weights_only=False)["model"]
    return whole, loaded, compiled, weights


def test_a_second_run_loads_every_program_compiles_none_and_trains_the_same(tmp_path):
    """Cold, warm, then warm again as if on another CPU: that run reads none of the entries
    (its own folder), so it compiles everything again."""
    cache = tmp_path / "cache"
    here, there = "x86_64 avx512f made-up", "x86_64 sse2 made-up"
    whole, loaded, compiled, cold = _train(tmp_path, "cold", cache, here)
    assert whole == loaded == 0 and compiled > 0
    whole, loaded, compiled_again, warm = _train(
        tmp_path, "warm", cache, here, "gmi.debug.sync=true"
    )
    assert compiled_again == 0 and loaded == compiled  # stored programs: compiles loaded too
    assert whole >= 3  # the MJX step, its start and its blank worlds, not even lowered
    assert cold.keys() == warm.keys()
    assert all(torch.equal(cold[k], warm[k]) for k in cold)
    whole, loaded, compiled_there, _ = _train(tmp_path, "there", cache, there)
    assert whole == loaded == 0 and compiled_there == compiled
    assert len([p for p in cache.iterdir() if p.is_dir()]) == 2  # one folder per CPU


def test_the_setting_is_checked_and_named(monkeypatch, tmp_path):
    with pytest.raises(ConfigError, match=r"^gmi\.compile_cache=''"):
        GmiConfig.from_node({"compile_cache": ""})
    assert GmiConfig.from_node({}).compile_cache == "auto"
    assert compile_cache.cache_folder("off") is None
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = compile_cache.cache_folder("auto")
    assert folder.parent == tmp_path / "isaacgymenvs_gmi" / "xla"
    assert folder.name == compile_cache.machine_key()


def test_the_command_shows_and_clears_the_cache(tmp_path):
    cache = tmp_path / "cache"
    (cache / "abc").mkdir(parents=True)
    (cache / "abc" / "entry").write_bytes(b"x" * 2**20)
    run = [sys.executable, "-m", "isaacgymenvs_gmi.sim.compile_cache", f"gmi.compile_cache={cache}"]
    shown = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert f"{cache}: 1.0 MiB" in shown
    subprocess.run([*run, "--clear"], capture_output=True, check=True)
    assert not cache.exists()


def test_three_gmis_on_a_cold_cache_compile_each_program_once(tmp_path):
    """The device's first GMI compiles (on a throwaway env) and the other two load it all."""
    proc = _mjx_cartpole(
        tmp_path,
        tmp_path / "runs",
        tmp_path / "cache",
        "max_iterations=1",
        "gmi.per_gpu=3",
        "gmi.debug.sync=true",
    )
    text = proc.stdout + proc.stderr
    assert "gmi.debug.sync: every env step and collective waits for the device" in text
    _, _, compiled = _counts(COUNTS.search(text))
    whole, loaded, compiled_by_others = _counts(OTHERS.search(text))
    assert compiled > 0 and compiled_by_others == 0, proc.stderr[-3000:]
    assert whole + loaded >= compiled  # 2 x each program, loaded
