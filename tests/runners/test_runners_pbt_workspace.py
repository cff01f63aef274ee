"""The PBT workspace: upstream's layout, whole files only, the equal-or-less-experience view of
the population, pruning, the best policy kept, and config values written into a member's copy."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import torch
import yaml

from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint
from isaacgymenvs_gmi.runners.pbt.body import _with_values, workspace_root
from isaacgymenvs_gmi.runners.pbt.member import state_fingerprint
from isaacgymenvs_gmi.runners.pbt.telemetry import announce_start, summarise, wait_for_members
from isaacgymenvs_gmi.runners.pbt.workspace import BEST_FILES_KEPT, MAX_RECORDS, Workspace


def _state(value: float) -> dict:
    return {"model": {"w": torch.full((4,), value)}, "epoch": 1, "frame": 10}


def _record(ws: Workspace, member: int, iteration: int, objective: float, frame: int = 0):
    return ws.write_record(
        member,
        iteration,
        _state(objective),
        objective=objective,
        frame=frame or iteration * 100,
        params={"train.params.config.gamma": 0.99},
        experiment_name=f"run_pbt_{member:02d}",
    )


def test_records_follow_upstreams_layout_and_load(tmp_path):
    ws = Workspace(str(tmp_path / "ws"), 2)
    ws.prepare(1)
    record = _record(ws, 1, 7, 12.5)
    folder = tmp_path / "ws" / "001"
    assert sorted(os.listdir(folder)) == ["000007.pth", "000007.yaml"]  # no temporaries left
    raw = yaml.safe_load((folder / "000007.yaml").read_text())
    assert raw == {
        "iteration": 7,
        "true_objective": 12.5,
        "frame": 700,
        "params": {"train.params.config.gamma": 0.99},
        "checkpoint": str(folder / "000007.pth"),
        "pbt_checkpoint": str(folder / "000007.yaml"),
        "experiment_name": "run_pbt_01",
    }
    assert ws.read_record(1, 7) == record
    assert torch.equal(read_checkpoint(record.checkpoint)["model"]["w"], torch.full((4,), 12.5))


def test_the_population_is_seen_at_equal_or_less_experience(tmp_path):
    ws = Workspace(str(tmp_path / "ws"), 3)
    for m in range(3):
        ws.prepare(m)
    _record(ws, 0, 2, 1.0)
    _record(ws, 0, 5, 9.0)  # member 0 ran ahead: not held against a member at iteration 4
    _record(ws, 1, 4, 3.0)
    seen = ws.population(4)
    assert seen[0].iteration == 2 and seen[1].iteration == 4 and seen[2] is None
    assert ws.latest(0).iteration == 5


def test_pruning_keeps_recent_records_and_bounds_their_number(tmp_path):
    ws = Workspace(str(tmp_path / "ws"), 2)
    ws.prepare(0)
    ws.prepare(1)
    for it in range(1, 41):
        _record(ws, 0, it, float(it))
    _record(ws, 1, 30, 1.0)
    ws.prune(0, ws.population(40))
    its = ws.iterations(0)
    assert min(its) > 30 - 20  # far behind the population's oldest (member 1 at 30): gone
    assert len(its) <= MAX_RECORDS and its[-10:] == list(range(31, 41))
    pths = sorted(n for n in os.listdir(ws.member_dir(0)) if n.endswith(".pth"))
    assert pths == [f"{i:06d}.pth" for i in its]  # a record never without its checkpoint


def test_the_best_policy_is_kept_only_when_it_improves(tmp_path):
    ws = Workspace(str(tmp_path / "ws"), 2)
    ws.prepare(0)
    assert ws.keep_best(1, _record(ws, 0, 1, 5.0), "Cartpole", 100) is not None
    assert ws.keep_best(1, _record(ws, 0, 2, 4.0), "Cartpole", 200) is None
    for it in range(3, 8):
        ws.keep_best(1, _record(ws, 0, it, float(it)), "Cartpole", it * 100)
    kept = sorted(os.listdir(ws.best_dir(1)))
    assert len(kept) == BEST_FILES_KEPT
    assert kept[-1] == "Cartpole_best_obj_000000007.00000_iter_0007_policy000_frame700.yaml"
    state = read_checkpoint(os.path.join(ws.best_dir(1), kept[-2]))
    assert torch.equal(state["model"]["w"], torch.full((4,), 7.0))


def test_a_reader_never_meets_half_a_record(tmp_path):
    ws = Workspace(str(tmp_path / "ws"), 2)
    ws.prepare(0)
    ws.prepare(1)
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set():
            try:
                for record in ws.population(10**6).values():
                    if record is not None and os.path.exists(record.checkpoint):
                        read_checkpoint(record.checkpoint)
            except FileNotFoundError:
                pass  # pruned between listing and reading: absent, never half
            except BaseException as err:  # noqa: BLE001
                errors.append(err)

    reader = threading.Thread(target=read)
    reader.start()
    for it in range(1, 60):
        _record(ws, 0, it, float(it))
        ws.prune(0, {0: ws.latest(0), 1: ws.latest(0)})
    done.set()
    reader.join()
    assert not errors, errors[:3]


def test_live_states_skip_members_not_started(tmp_path):
    ws = Workspace(str(tmp_path / "ws"), 3)
    ws.prepare(0)
    ws.write_live(0, {"state": "training", "objective": 3.0})
    assert ws.read_live() == {0: {"state": "training", "objective": 3.0}}


def test_the_end_waits_for_a_member_still_starting_here_and_then_names_it(tmp_path):
    """A member that announced its start and is still a process on this host (compiling, say)
    is waited for however long it has been silent; once it is gone, the summary says so."""
    ws = Workspace(str(tmp_path / "ws"), 2)
    for member in (0, 1):
        ws.prepare(member)
    ws.write_live(0, {"state": "done", "objective": 5.0, "time": time.time()})
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1.5)"])
    announce_start(ws, 1)
    ws.write_live(1, {**ws.read_live()[1], "pid": busy.pid, "time": time.time() - 100})
    started = time.monotonic()
    live = wait_for_members(ws, patience_s=0.1, poll_s=0.05)
    busy.wait()
    assert time.monotonic() - started >= 1.0 and busy.returncode == 0
    lines = summarise(live, 2).lines
    assert (
        lines[2]
        == "  member 1: objective -, 0 frames, replaced 0x, mutated 0x, gone before its first epoch"
    )


def test_mutated_values_land_in_a_copy_of_the_config():
    train = {"config": {"gamma": 0.99, "reward_shaper": {"scale_value": 0.1}}}
    task = {"env": {"headingWeight": 0.5}}
    params = {
        "train.params.config.gamma": 0.98,
        "train.params.config.reward_shaper.scale_value": 0.2,
        "task.env.headingWeight": 0.6,
    }
    assert _with_values(train, "train.params.", params) == {
        "config": {"gamma": 0.98, "reward_shaper": {"scale_value": 0.2}}
    }
    assert _with_values(task, "task.", params) == {"env": {"headingWeight": 0.6}}
    assert train["config"]["gamma"] == 0.99  # the run's own config is untouched


def test_workspace_is_placed_under_train_dir_unless_absolute(tmp_path):
    assert workspace_root("runs", "pbt_ws") == os.path.join("runs", "pbt_ws")
    assert workspace_root("runs", str(tmp_path)) == str(tmp_path)


def test_fingerprints_tell_weights_apart():
    a, b = {"w": torch.ones(3)}, {"w": torch.ones(3)}
    assert state_fingerprint(a) == state_fingerprint(b)
    b["w"][1] = 1.0000001
    assert state_fingerprint(a) != state_fingerprint(b)


def test_playing_needs_no_population():
    from isaacgymenvs_gmi.runners.pbt import MODE

    cfg = {"test": True, "pbt": {"enabled": True}}
    assert MODE.settings(cfg) is None
    assert MODE.settings({"test": False, "pbt": {"enabled": True}}).num_policies is None
