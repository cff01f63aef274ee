"""PBT end to end, for real: a population of 3 Cartpole members as GMI processes sharing a
workspace, with small intervals so that members replace and mutate within a short run."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import yaml

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.runners.pbt.member import state_fingerprint
from isaacgymenvs_gmi.runners.pbt.workspace import Workspace
from tests.gmi.launched_run import LaunchedRun
from tests.gmi.test_gmi_runtime import train
from tests.helpers import assert_ok
from tests.pbt_upstream_files import write_upstream_pbt_files

pytestmark = pytest.mark.serial  # members' decisions follow their relative progress

ROOT = Path(__file__).resolve().parents[2]
NO_GPU = (False, ("cpu",), False)  # (cuda available, JAX platforms, warp installed)
POPULATION = (
    "task=Cartpole",
    "pbt=pbt_default",
    "pbt/mutation=cartpole_mutation",
    "gmi.per_gpu=3",
    "num_envs=128",
    "train.params.config.minibatch_size=512",
    "+train.params.config.games_to_track=20",
    "pbt.interval_steps=4096",  # two epochs of 128 envs x 16 steps
    "pbt.start_after=0",
    "pbt.initial_delay=4096",
    "pbt.replace_fraction_worst=0.34",  # rounded up: the worst 2 of 3 (frequent decisions)
    "pbt.replace_threshold_frac_std=0.1",
    "pbt.replace_threshold_frac_absolute=0.15",  # leads under 15%: mutate, above: replace
    "pbt.mutation_rate=1.0",
)
REPLACED = re.compile(
    r"\[PBT\] member (\d): replaced by member (\d) \(iteration (\d+), .*; weights ([0-9a-f]{32});"
)
CONTINUES = re.compile(
    r"\[PBT\] member (\d): continues at epoch \d+, frame [\d,]+ "
    r"with weights ([0-9a-f]{32}) \(as recorded\)"
)
MUTATES = re.compile(r"^\[PBT\] member (\d): mutates \(.*\): (.*)$", re.MULTILINE)


@pytest.fixture(scope="module")
def population(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    tmp = tmp_path_factory.mktemp("pbt")
    run = train(*POPULATION, "max_iterations=60", "seed=3", tmp_path=tmp)
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-3000:]
    return run, tmp / "runs"


def test_a_population_replaces_and_mutates(population):
    run, runs = population
    out = run.stdout
    assert REPLACED.findall(out), out[-4000:]  # took a better member's weights
    assert MUTATES.findall(out), out[-4000:]  # kept its own, with new hyperparameters
    assert "PBT population of 3: best member" in out
    workspace = runs / "pbt_workspace"
    for member in range(3):
        assert list((workspace / f"{member:03d}").glob("*.yaml")), member
        assert list((workspace / f"best{member}").glob("*.pth")), member


def test_a_replaced_member_continues_from_the_donors_weights(population):
    run, runs = population
    workspace = Workspace(str(runs / "pbt_workspace"), 3)
    continued = CONTINUES.findall(run.stdout)
    for member, donor, iteration, weights in REPLACED.findall(run.stdout):
        # the learner rebuilt from the donor's checkpoint holds exactly its weights ...
        assert (member, weights) in continued
        # ... which are the ones the donor recorded at that iteration (when not yet pruned)
        record = workspace.read_record(int(donor), int(iteration))
        if record is not None:
            state = read_checkpoint(record.checkpoint)
            assert state_fingerprint(state["model"]) == weights


def test_records_are_in_upstreams_layout(population):
    _, runs = population
    member_dir = runs / "pbt_workspace" / "001"
    names = sorted(p.name for p in member_dir.iterdir() if p.is_file())
    assert names and all(re.fullmatch(r"\d{6}\.(yaml|pth)", n) for n in names), names
    newest = [n for n in names if n.endswith(".yaml")][-1]
    record = yaml.safe_load((member_dir / newest).read_text())
    assert set(record) == {
        "iteration",
        "true_objective",
        "frame",
        "params",
        "checkpoint",
        "pbt_checkpoint",
        "experiment_name",
    }
    assert set(record["params"]) >= {"train.params.config.gamma", "train.params.config.e_clip"}
    assert Path(record["checkpoint"]).is_file()


def test_tensorboard_per_member(population):
    _, runs = population
    members = sorted(p.name for p in runs.iterdir() if "_pbt_" in p.name)
    assert [m[-2:] for m in members] == ["00", "01", "02"]
    for m in members:
        assert list((runs / m / "summaries").glob("events.out.tfevents.*"))


def test_a_killed_member_leaves_the_others_training(tmp_path):
    run = LaunchedRun(tmp_path, *POPULATION, "max_iterations=30", "gmi.timeout_s=5")
    run.wait_for("[PBT x3] epoch 4/", timeout=120)
    os.kill(run.gmi_pids()[2], signal.SIGKILL)
    code = run.finish(timeout=240)
    out, err = run.text("out"), run.text("err")
    assert code == 0, err[-3000:]
    assert re.search(
        r"GMI 2 \(pid \d+\) killed by SIGKILL; the run goes on with 2 of 3 PBT member", err
    ), err[-3000:]
    assert "[PBT x3] epoch 30/30" in out
    assert re.search(r"member 2: .*gone", out), out[-2000:]
    assert not run.leftovers()


def test_upstreams_pbt_files_compose_and_start_unchanged(tmp_path):
    """IsaacGymEnvs' pbt_default.yaml and ant_mutation.yaml, found through the search path as a
    user's own cfg folder: with the population size given on the command line (as upstream's file
    asks), Ant trains as a population (its 8 policies on 3 GMIs are refused naming the key:
    tests/config/test_cfg_pbt.py)."""
    upstream = tmp_path / "upstream_cfg"
    write_upstream_pbt_files(upstream)
    common = (
        f"hydra.searchpath=[file://{upstream}]",
        "task=Ant",
        "pbt=pbt_default",
        "pbt/mutation=ant_mutation",
        "gmi.per_gpu=3",
    )
    run = train(
        *common,
        "pbt.num_policies=3",
        "num_envs=64",
        "train.params.config.minibatch_size=512",
        "max_iterations=2",
        tmp_path=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-2000:]
    assert "[PBT x3] epoch 2/2" in run.stdout
    assert "PBT population of 3" in run.stdout
    assert "workspace pbt_workspace" in run.stdout + run.stderr
    assert sorted(p.name for p in (tmp_path / "runs").iterdir() if "_pbt_" in p.name)


def test_a_member_that_fails_restarts_from_its_newest_record(tmp_path):
    run = train(
        *POPULATION, "max_iterations=24", "pbt.replace_fraction_worst=0.01",
        tmp_path=tmp_path, env={"ISAACGYMENVS_GMI_FAULT": "1:crash:12"},
    )  # fmt: skip
    assert_ok(run)
    restarted = re.search(
        r"\[PBT\] member 1: failed \(RuntimeError: injected crash in GMI 1\); restarts from "
        r"its iteration (\d+) \(frame ([\d,]+)\) \[1/3\]",
        run.stdout,
    )
    assert restarted, run.stdout[-3000:]
    assert "[PBT x3] epoch 24/24" in run.stdout
    member_1 = r"member 1(?: \(best\))?: objective [\d.]+.*, 49,152 frames, .*done"  # may lead
    assert re.search(member_1, run.stdout), run.stdout[-1500:]


def test_ctrl_c_stops_every_member_with_a_checkpoint(tmp_path):
    run = LaunchedRun(tmp_path, *POPULATION, "max_iterations=400", own_group=True)
    run.wait_for("[PBT x3] epoch 6/", timeout=120)
    run.signal_group(signal.SIGINT)
    code = run.finish(timeout=120)
    out, err = run.text("out"), run.text("err")
    assert code == 130, err[-3000:]
    assert "Traceback" not in err
    for member in range(3):
        assert re.search(rf"member {member}\b.*stopped", out), out[-2000:]
        (folder,) = (run.runs).glob(f"*_pbt_{member:02d}")
        assert list((folder / "nn").glob("*.pth")), member
    assert "stopped by SIGINT" in err
    assert not run.leftovers()


def test_the_workspace_says_which_population_it_holds(population):
    _, runs = population
    held = yaml.safe_load((runs / "pbt_workspace" / "population.yaml").read_text())
    assert (held["task"], held["members"], held["observations"], held["actions"]) == (
        "Cartpole",
        3,
        4,
        1,
    )
    assert held["model"] == "continuous_a2c_logstd" and '"units": [32, 32]' in held["network"]


@pytest.mark.parametrize(
    ("change", "differs"),
    [
        (("task=Ant",), "task, observations, actions, network"),  # another task in that train_dir
        (("gmi.per_gpu=2",), "members"),
        (("train.params.network.mlp.units=[64,64]",), "network"),
    ],
)
def test_a_run_that_could_not_resume_the_workspace_is_refused_before_start(
    population, compose_cfg, change, differs
):
    """In process: the launcher's checks refuse it, naming pbt.workspace and both ways out,
    before any GMI, simulator or file exists."""
    _, runs = population
    workspace = runs / "pbt_workspace"
    changed = {c.split("=")[0] for c in change}
    kept = [o for o in POPULATION if o.split("=")[0] not in changed]
    cfg = compose_cfg(*kept, *change, f"train_dir={runs}")
    with pytest.raises(ConfigError) as refused:
        plan_run(cfg, NO_GPU)
    text = str(refused.value)
    assert text.startswith(f"pbt.workspace={str(workspace)!r}: holds another population (Cartpole")
    assert f"differs in {differs})" in text
    assert "set pbt.workspace to another folder" in text and f"or remove {workspace}" in text


def test_the_same_population_resumes_from_its_workspace(population, tmp_path):
    """Cartpole, then Cartpole again in the same train_dir: every member resumes from its newest
    record (the workspace copied, so the other tests keep theirs)."""
    _, runs = population
    shutil.copytree(runs / "pbt_workspace", tmp_path / "runs" / "pbt_workspace")
    again = train(*POPULATION, "max_iterations=2", "seed=4", tmp_path=tmp_path)
    assert_ok(again)
    resumed = re.findall(r"\[PBT\] member (\d): resumes from its iteration (\d+)", again.stdout)
    assert sorted(m for m, _ in resumed) == ["0", "1", "2"], again.stdout[-3000:]
    assert "never reported" not in again.stdout
