"""Real searches on Cartpole: trial runs in processes of their own, the cache, injected failures,
and ``gmi.per_gpu=auto`` through ``train.py``."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from isaacgymenvs_gmi.placement.inventory import Inventory
from isaacgymenvs_gmi.planner import choose, resolve
from isaacgymenvs_gmi.planner.search import Candidate, Profile
from isaacgymenvs_gmi.planner.trial import TrialSetup, run_trial
from tests.conftest import SESSION_ENV
from tests.helpers import assert_ok, run_train
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[2]
QUICK = ["gmi.plan.epochs=4", "gmi.plan.warmup_epochs=1", "gmi.plan.budget_s=300"]
SEARCH = ["task=Cartpole", "gmi.per_gpu=auto", "gmi.plan.max_per_gpu=2", *QUICK]


def counted(monkeypatch) -> list[Candidate]:
    """The candidates that get a real trial run from here on."""
    runs: list[Candidate] = []
    real = resolve.run_trial

    def counting(setup, cand, seconds):
        runs.append(cand)
        return real(setup, cand, seconds)

    monkeypatch.setattr(resolve, "run_trial", counting)
    return runs


def python(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=budget(600)
    )


def trial_processes() -> list[psutil.Process]:
    """Planner trial processes this test session started (its marker is in their environment),
    alive or orphaned; another suite's on the same machine are not ours."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if any("trial_main" in part for part in p.info["cmdline"] or ()):
            try:
                if p.environ().get(SESSION_ENV) == os.environ[SESSION_ENV]:
                    out.append(p)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
    return out


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("plans")


@pytest.fixture(scope="module")
def searched(cache_dir) -> tuple:
    """One real search (2 GMIs x 256 envs, 1 GMI x 512 envs, and each again if they come within
    5% of each other), its printout."""
    from tests.conftest import compose_config

    cfg = compose_config(*SEARCH, f"gmi.plan.cache_dir={cache_dir}")
    out = io.StringIO()
    choice = choose(cfg, stream=out)
    return cfg, choice, out.getvalue()


def test_a_real_search_measures_every_candidate_and_caches_the_table(searched, cache_dir):
    cfg, choice, printed = searched
    rows = choice.result["rows"]
    assert [(r["per_gpu"], r["num_envs"]) for r in rows[:2]] == [(2, 256), (1, 512)]
    assert all(r["decision"].startswith(("re-measured", "chosen")) for r in rows[2:])  # if close
    for r in rows:
        assert r["runnable"], r
        assert r["env_steps_per_s"] > 1000 and 200 < r["memory_mb"] < 20000
        assert r["seconds"] > 0
    assert choice.result["trials"] == len(rows) and not choice.from_cache
    assert [r["decision"] for r in rows].count("chosen") == 1
    assert choice.candidate.per_gpu in (1, 2)
    # the chosen config keeps the 512 envs and the minibatches per epoch (one) of the config
    envs = choice.candidate.num_envs
    assert envs * choice.candidate.per_gpu == 512
    assert choice.cfg.train.params.config.minibatch_size == 16 * envs
    assert "[plan] [##########..........] 1/2 per_gpu=2 num_envs=256" in printed
    assert "[plan] chose gmi.per_gpu=" in printed
    stored = json.loads(choice.cache_path.read_text())
    assert choice.cache_path.parent == cache_dir
    assert stored["result"]["rows"] == rows
    assert stored["fingerprint"]["cores"] == len(os.sched_getaffinity(0))
    assert not trial_processes()


def test_the_second_search_runs_no_trial(searched, cache_dir, monkeypatch, compose_cfg):
    runs = counted(monkeypatch)
    again = choose(compose_cfg(*SEARCH, f"gmi.plan.cache_dir={cache_dir}"), stream=io.StringIO())
    assert runs == [] and again.from_cache
    assert again.candidate == searched[1].candidate
    # run length and names are not part of the key
    longer = compose_cfg(*SEARCH, f"gmi.plan.cache_dir={cache_dir}", "max_iterations=7")
    assert choose(longer, stream=io.StringIO()).from_cache and runs == []


@pytest.mark.parametrize(
    "change",
    [
        ["train.params.config.gamma=0.98"],  # the train config
        ["task.env.maxEffort=300"],  # the task config
        ["gmi.plan.alpha=0.2"],  # the search itself
    ],
)
def test_a_changed_config_misses_the_cache(searched, cache_dir, compose_cfg, change):
    asked = []

    def profiler(cand, seconds):
        asked.append(cand)
        return Profile(True, 1000.0, 500.0, seconds=0.1)

    cfg = compose_cfg(*SEARCH, f"gmi.plan.cache_dir={cache_dir}", *change)
    choice = choose(cfg, profiler=profiler, stream=io.StringIO())
    assert len(asked) >= 2 and not choice.from_cache  # searched again


def test_a_changed_fingerprint_misses_the_cache(searched, cache_dir, compose_cfg):
    asked = []

    def profiler(cand, seconds):
        asked.append(cand)
        return Profile(True, 1000.0, 500.0, seconds=0.1)

    cfg = compose_cfg(*SEARCH, f"gmi.plan.cache_dir={cache_dir}")
    other = Inventory(cores=(*range(len(os.sched_getaffinity(0))), 99))
    choice = choose(cfg, profiler=profiler, inventory=other, stream=io.StringIO())
    assert len(asked) >= 2 and not choice.from_cache  # searched again
    assert choice.cache_path != searched[1].cache_path


def test_injected_failures_are_not_runnable_with_their_reason(compose_cfg, tmp_path):
    """num_envs=auto on one GMI over 32, 64, 128, 256 envs: the first crashes, the second hangs,
    the third breaks the memory cap; the fourth runs and is chosen."""
    cfg = compose_cfg(
        "task=Cartpole",
        "num_envs=auto",
        "gmi.plan.min_envs=32",
        "gmi.plan.max_envs=256",
        f"gmi.plan.cache_dir={tmp_path}",
        *QUICK,
    )
    base = {}

    def profiler(cand: Candidate, seconds: float) -> Profile:
        setup = base["setup"]
        if cand.num_envs == 32:
            setup = replace(setup, environ={"ISAACGYMENVS_GMI_FAULT": "0:crash:2"})
        elif cand.num_envs == 64:
            setup = replace(
                setup,
                environ={"ISAACGYMENVS_GMI_FAULT": "0:hang:2"},
                settings=replace(setup.settings, timeout_s=5),  # hung whenever it is cut
            )
        elif cand.num_envs == 128:
            setup = replace(setup, memory_cap_mb=50.0)
        return run_trial(setup, cand, seconds)

    from isaacgymenvs_gmi.planner.resolve import check_request

    settings, request, _ = check_request(cfg)
    base["setup"] = TrialSetup(cfg, request, settings, memory_cap_mb=20000.0)
    choice = choose(cfg, profiler=profiler, stream=io.StringIO())
    rows = {r["num_envs"]: r["decision"] for r in choice.result["rows"]}
    assert rows[32].startswith("not runnable: crash: GmiFailure") or rows[32].startswith(
        "not runnable: crash: RuntimeError: injected crash"
    ), rows[32]
    assert rows[64].startswith("not runnable: hang: no result within 5 s"), rows[64]
    assert rows[128].startswith("not runnable: out of memory:"), rows[128]
    assert "> cap 50 MiB" in rows[128]
    assert rows[256] == "chosen"
    assert choice.candidate == Candidate(1, 256)
    assert not trial_processes()  # every trial's processes are gone


def test_per_gpu_auto_trains_cartpole_with_the_chosen_configuration(searched, cache_dir):
    _, choice, _ = searched
    proc = run_train(
        *SEARCH,
        f"gmi.plan.cache_dir={cache_dir}",
        "max_iterations=30",
        "train.params.config.save_frequency=0",
        f"train_dir={cache_dir / 'runs'}",
        timeout_s=600,
    )
    assert_ok(proc)
    out = proc.stdout + proc.stderr
    assert "[plan] chose " + " ".join(choice.overrides()) in out
    assert "from the cache" in out
    c = choice.candidate
    assert f"Cartpole: {c.num_envs} envs per GMI" in out
    starts = re.findall(r"^GMI \d+: node", out, re.M)  # each spawned GMI's start line
    assert len(starts) == (c.per_gpu if c.per_gpu > 1 else 0)
    rewards = [float(x) for x in re.findall(r"mean (?:episode )?reward (-?[\d.]+)", out)]
    assert rewards and max(rewards[-3:]) > 100, rewards  # it learns (random play: ~20)


def test_the_cli_prints_the_table_writes_json_and_plot_and_the_command(
    searched, cache_dir, tmp_path
):
    _, choice, _ = searched
    args = [a for a in SEARCH if a != "gmi.per_gpu=auto"]  # the CLI searches per_gpu by default
    proc = python(
        "-m",
        "isaacgymenvs_gmi.planner",
        *args,
        f"gmi.plan.cache_dir={cache_dir}",
        f"--out={tmp_path}",
    )
    assert_ok(proc)
    assert "candidate" in proc.stdout and "per_gpu=2 num_envs=256" in proc.stdout
    command = "python train.py task=Cartpole " + " ".join(choice.overrides())
    assert proc.stdout.rstrip().endswith(command)
    written = json.loads((tmp_path / "plan-Cartpole.json").read_text())
    assert written["from_cache"] and written["command"] == command
    assert written["rows"] == choice.result["rows"]
    assert (tmp_path / "plan-Cartpole.png").stat().st_size > 1000
