"""The packed sweep's parts in one process: slots and their cores, the launcher's settings and
limits, progress lines read back, the live table, the ranked summary and the JobReturns."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from hydra.core.utils import JobStatus
from omegaconf import OmegaConf

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.runners.sync_ppo.telemetry import progress_line
from isaacgymenvs_gmi.sweep.jobs import JobRefused, JobSpec, check_fits
from isaacgymenvs_gmi.sweep.launcher import JobFailed, PackedSweep
from isaacgymenvs_gmi.sweep.report import summary_lines, summary_rows, table_lines, write_summary
from isaacgymenvs_gmi.sweep.runner import PROGRESS, JobState, _progress
from isaacgymenvs_gmi.sweep.settings import LauncherSettings
from isaacgymenvs_gmi.sweep.slots import SlotPool, check_capacity

GIB = 1 << 30


def job(idx: int, gmis: int = 1, swept: tuple[str, ...] = ()) -> JobSpec:
    config = OmegaConf.create({"seed": idx, "hydra": {"job": {"name": "train"}}})
    folder = Path(f"/sweep/{idx}")
    return JobSpec(idx, (f"seed={idx}",), config, folder, gmis, folder / "runs", swept)


def test_slots_split_the_cores_and_a_job_of_k_gmis_takes_k_slots_of_one_device():
    pool = SlotPool(devices=2, per_device=2, cores=[0, 1, 2, 3])
    first = pool.take(1)
    assert (first.device, first.cores) == (0, (0,))
    pair = pool.take(2)  # device 0 has one slot left: the pair goes to device 1
    assert (pair.device, pair.cores) == (1, (2, 3)) and pool.free == 1
    assert pool.take(2) is None
    pool.give_back(first)
    assert pool.take(2).cores == (0, 1)
    with pytest.raises(ValueError, match="given back twice"):
        pool.give_back(pair) or pool.give_back(pair)
    with pytest.raises(ValueError, match="cannot fit"):
        pool.take(3)


def test_more_slots_than_cores_share_them_round_robin():
    pool = SlotPool(devices=1, per_device=4, cores=[0, 1])
    assert [pool.take(1).cores for _ in range(4)] == [(0,), (1,), (0,), (1,)]


def test_a_device_is_refused_more_jobs_than_it_holds_naming_the_launchers_key():
    with pytest.raises(ConfigError, match=r"^hydra\.launcher\.per_gpu=100: 100 jobs on 2 cores"):
        check_capacity(100, 1, cores=2, memory=24 * GIB, gpu=False)
    with pytest.raises(ConfigError, match=r"^hydra\.launcher\.per_gpu=49: MPS serves at most 48"):
        check_capacity(49, 1, cores=64, memory=512 * GIB, gpu=True)
    check_capacity(8, 1, cores=2, memory=24 * GIB, gpu=False)
    with pytest.raises(JobRefused, match=r"^job 1 \(gmi.per_gpu=3\): gmi.per_gpu=3 takes 3 slots"):
        check_fits([job(0), job(1, gmis=3, swept=("gmi.per_gpu=3",))], per_gpu=2)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({}, LauncherSettings()),
        ({"_target_": "x", "per_gpu": "auto"}, LauncherSettings(per_gpu=None)),
        (
            {"per_gpu": 3, "objective": "FINAL", "live": True},
            LauncherSettings(3, "final", None, "on"),
        ),
        ({"sm_percent": 50}, LauncherSettings(sm_percent=50.0)),
        (
            {"prune": "Halving", "min_epochs": 4, "reduction_factor": "2"},
            LauncherSettings(prune="halving", min_epochs=4, reduction_factor=2),
        ),
    ],
)
def test_launcher_settings(given, expected):
    assert LauncherSettings.from_node(given) == expected


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"per_gpu": 0}, "hydra.launcher.per_gpu=0: must be an integer >= 1 (jobs per device)"),
        ({"objective": "worst"}, "hydra.launcher.objective='worst': must be one of 'best'"),
        ({"sm_percent": 0}, "hydra.launcher.sm_percent=0: must be a number in (0, 100]"),
        ({"per_gpus": 2}, "hydra.launcher.per_gpus=2: unknown key"),
        ({"prune": "asha"}, "hydra.launcher.prune='asha': must be one of 'none', 'median'"),
        ({"prune": "halving", "reduction_factor": 1}, "hydra.launcher.reduction_factor=1: "),
        ({"warmup_epochs": -1}, "hydra.launcher.warmup_epochs=-1: must be an integer >= 0"),
    ],
)
def test_bad_launcher_settings_name_the_key(given, message):
    with pytest.raises(ConfigError) as info:
        LauncherSettings.from_node(given)
    assert str(info.value).startswith(message)


def test_the_runs_progress_line_is_read_back():
    row = {"per_gmi": [812.0], "reward": 41.25, "epoch": 3, "frames": 24576}
    row.update(env_steps_per_s=812.0, wall_s=12.0, eta_s=30.0)
    found = PROGRESS.search(progress_line(row, [], max_epochs=10))
    p = _progress(found)
    assert (p.epoch, p.max_epochs, p.steps_per_s, p.reward) == (3, 10, 812.0, 41.2)
    assert "ETA" in p.timing
    row.update(reward=None, per_gmi=[400.0, 412.0])  # no episode ended yet, two GMIs
    assert _progress(PROGRESS.search(progress_line(row, [], max_epochs=0))).reward is None


def _ended(idx: int, code: int, result: dict | None, start: float = 0.0) -> JobState:
    state = JobState(job(idx, swept=(f"seed={idx}",)), exit_code=code, result=result)
    state.proc, state.started, state.ended = object(), start, start + 5.0
    return state


def test_the_summary_ranks_rewards_first_and_names_what_failed(tmp_path):
    states = [
        _ended(0, 0, {"best_reward": 10.0, "final_reward": 8.0, "checkpoint": "a.pth"}),
        _ended(1, -9, None),
        _ended(2, 0, {"best_reward": 30.0, "final_reward": 9.0, "checkpoint": "c.pth"}),
        JobState(job(3, swept=("seed=3",))),  # stopped before it started
    ]
    rows = summary_rows(states, "best")
    assert [(r["job"], r["status"]) for r in rows] == [
        (2, "done"),
        (0, "done"),
        (1, "failed"),
        (3, "not started"),
    ]
    assert rows[2]["error"] == "killed by SIGKILL"
    text = "\n".join(summary_lines(rows, "best"))
    assert "1. job 2 (seed=2): done, best reward 30.0; checkpoint c.pth" in text
    assert "3. job 1 (seed=1): failed: killed by SIGKILL" in text
    assert [r["job"] for r in summary_rows(states, "final")][:2] == [2, 0]
    as_json, as_csv = write_summary(tmp_path, rows)
    assert json.loads(as_json.read_text())[0]["checkpoint"] == "c.pth"
    assert [r["job"] for r in csv.DictReader(as_csv.open())] == ["2", "0", "1", "3"]


def test_a_pruned_job_is_said_ranked_and_returned_with_what_it_reached(tmp_path):
    import io

    from isaacgymenvs_gmi.sweep.pruning import Pruned
    from isaacgymenvs_gmi.sweep.report import SweepConsole

    pruned = _ended(1, 130, {"best_reward": 21.5, "final_reward": 20.0, "stopped_by": "SIGINT"})
    pruned.pruned = Pruned(6, 20.0, "median of 2 finished jobs was 105.2")
    done = _ended(0, 0, {"best_reward": 150.0, "final_reward": 140.0})
    rows = summary_rows([done, pruned], "best")
    assert [(r["job"], r["status"]) for r in rows] == [(0, "done"), (1, "pruned")]
    assert rows[1]["pruned"] == "pruned at epoch 6 (median of 2 finished jobs was 105.2)"
    assert summary_lines(rows, "best")[2] == (
        "  2. job 1 (seed=1): pruned, best reward 21.5, pruned at epoch 6 (median of 2 "
        "finished jobs was 105.2)"
    )
    stream = io.StringIO()
    SweepConsole(gpu=False, live=False, stream=stream).ended(pruned)
    assert stream.getvalue().startswith(
        "sweep: job 1 (seed=1) pruned at epoch 6 (median of 2 finished jobs was 105.2) in 5.0 s:"
        " best reward 21.5, final 20.0"
    )
    sweep = PackedSweep.__new__(PackedSweep)
    sweep.settings = LauncherSettings(prune="median")
    assert sweep._job_return(pruned).return_value == 21.5  # the best it reached


def test_the_live_table_shows_running_and_queued_jobs():
    running = JobState(job(0, swept=("seed=0",)), started=0.0)
    running.proc = object()
    row = {"per_gmi": [900.0], "reward": 5.0, "epoch": 4, "frames": 1, "env_steps_per_s": 900.0}
    row.update(wall_s=3.0, eta_s=9.0)
    running.progress = _progress(PROGRESS.search(progress_line(row, [], max_epochs=8)))
    lines = table_lines([running, JobState(job(1, swept=("seed=1",)))], width=200)
    assert lines[0].split() == ["job", "overrides", "epoch", "reward", "env", "steps/s", "ETA"]
    assert lines[1].split()[:5] == ["0", "seed=0", "4/8", "5.0", "900"]
    assert lines[2].split() == ["1", "seed=1", "-", "-", "-", "queued"]


def test_job_returns_carry_the_reward_or_the_error():
    sweep = PackedSweep.__new__(PackedSweep)
    sweep.settings = LauncherSettings(objective="final")
    done = sweep._job_return(_ended(0, 0, {"best_reward": 3.0, "final_reward": 2.0}))
    assert done.status == JobStatus.COMPLETED and done.return_value == 2.0
    assert done.overrides == ["seed=0"] and done.working_dir == "/sweep/0"
    assert "hydra" not in done.cfg and done.hydra_cfg.hydra.job.name == "train"
    no_episode = sweep._job_return(_ended(1, 0, {"best_reward": None, "final_reward": None}))
    assert math.isnan(no_episode.return_value)  # Optuna records it as a failed trial
    failed = sweep._job_return(_ended(2, -9, None))
    assert failed.status == JobStatus.FAILED
    with pytest.raises(JobFailed, match=r"job 2 \(seed=2\): killed by SIGKILL"):
        _ = failed.return_value


@pytest.mark.parametrize(
    ("launcher", "target"),
    [
        ("gmi", "hydra_plugins.isaacgymenvs_gmi_launcher.GmiLauncher"),
        ("submitit_slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
    ],
)
def test_the_launcher_config_composes_beside_submitits(launcher, target):
    """Both launchers are options of the same config tree: an outer SLURM sweep whose jobs are
    packed sweeps picks one per level."""
    import warnings

    from hydra import compose, initialize_config_dir

    from tests.conftest import CFG_DIR

    with warnings.catch_warnings(), initialize_config_dir(str(CFG_DIR), version_base="1.1"):
        warnings.simplefilter("ignore")
        cfg = compose("config", [f"hydra/launcher={launcher}"], return_hydra_config=True)
    assert cfg.hydra.launcher._target_ == target
    if launcher == "gmi":
        assert LauncherSettings.from_node(cfg.hydra.launcher) == LauncherSettings()


def test_per_gpu_auto_asks_the_planner_with_the_first_jobs_config(monkeypatch):
    import isaacgymenvs_gmi.planner as planner
    from isaacgymenvs_gmi.sweep.launcher import _planned_per_gpu

    asked = []

    def planned(cfg):  # the planner's answer for GMIs of this config (searched or cached)
        asked.append(cfg)
        return OmegaConf.merge(cfg, {"gmi": {"per_gpu": 3}})

    monkeypatch.setattr(planner, "resolve_auto", planned)
    first = job(0)
    first.config = OmegaConf.merge(first.config, {"gmi": {"per_gpu": 1}})
    assert _planned_per_gpu(first) == 3
    assert asked[0].gmi.per_gpu == "auto" and "hydra" not in asked[0]
