"""patches/SWAP.md, run as written: every ``python train.py`` line of the guide, against a project
laid out as the guide shows (its own renamed task file, its assets folder, its task module)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.speed import budget

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "patches" / "SWAP.md"
FAST = ["train.params.config.minibatch_size=512", "train.params.config.horizon_length=8"]


def guide_commands() -> list[str]:
    """The guide's command lines that run ``python train.py`` (indented code lines)."""
    lines = [line.strip() for line in GUIDE.read_text().splitlines() if line.startswith("    ")]
    return [line for line in lines if re.search(r"(^|\s)python train\.py\s", line)]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """An IsaacGymEnvs-style project: MyAnt.yaml / MyAntPPO.yaml (renamed from upstream's Ant
    files), the model under assets/ and the module mapping MyAnt onto the suite's Ant rules."""
    root = tmp_path_factory.mktemp("project")
    (root / "cfg" / "task").mkdir(parents=True)
    (root / "cfg" / "train").mkdir()
    task = (ROOT / "cfg" / "task" / "Ant.yaml").read_text()
    (root / "cfg" / "task" / "MyAnt.yaml").write_text(
        re.sub(r"(?m)^name: Ant$", "name: MyAnt", task)
    )
    train = (ROOT / "cfg" / "train" / "AntPPO.yaml").read_text()
    (root / "cfg" / "train" / "MyAntPPO.yaml").write_text(
        train.replace("resolve_default:Ant,", "resolve_default:MyAnt,")
    )
    (root / "assets" / "mjcf").mkdir(parents=True)
    model = (ROOT / "tasks" / "assets" / "ant.xml").read_text()
    (root / "assets" / "mjcf" / "nv_ant.xml").write_text(model)
    (root / "my_gmi_tasks.py").write_text(
        "from isaacgymenvs_gmi import register_task\n"
        "from isaacgymenvs_gmi.tasks import Ant\n\n"
        'register_task("MyAnt", Ant)\n'
    )
    return root


def _run(command: str, project: Path, runs: Path, extra: list[str]) -> subprocess.CompletedProcess:
    words = shlex.split(command.replace("$PROJECT", str(project)))
    env = dict(os.environ)
    while "=" in words[0] and not words[0].startswith("python"):  # VAR=value prefixes
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    assert words[:2] == ["python", "train.py"], command
    return subprocess.run(
        [sys.executable, "train.py", *words[2:], *extra, f"train_dir={runs}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(600),
        env=env,
    )


def test_the_guide_has_a_training_and_a_playing_command():
    commands = guide_commands()
    assert len(commands) == 2 and "test=True" in commands[1], commands


def test_the_guides_commands_train_and_play_a_projects_task(project, tmp_path):
    train, play = guide_commands()
    proc = _run(train, project, tmp_path, ["num_envs=64", "max_iterations=2", *FAST])
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(re.findall(r"^GMI (\d): node ", proc.stdout, re.M)) == ["0", "1"]
    assert "Ant: 64 envs, mujoco backend" in proc.stderr  # the suite's Ant rules, our model
    (checkpoint,) = tmp_path.glob("MyAnt*/nn/last_*.pth")
    played = _run(
        play.replace("$CHECKPOINT", str(checkpoint)), project, tmp_path, ["max_iterations=2"]
    )
    assert played.returncode == 0, played.stderr[-3000:]
    assert "mean episode reward" in played.stdout and "Ant: 8 envs" in played.stderr
