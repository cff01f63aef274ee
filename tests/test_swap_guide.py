"""patches/SWAP.md, run as written: every ``python train.py`` line of the guide, against a project
laid out as the guide shows (upstream's file names with its own values, its assets folder)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest
import torch

from tests.helpers import assert_ok, run_train

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "patches" / "SWAP.md"
PROJECT_ENVS, PROJECT_HORIZON = 64, 8  # the project's own values (bundled Ant: 4096, 16)


def guide_commands() -> list[str]:
    """The guide's command lines that run ``python train.py`` (indented code lines)."""
    lines = [line.strip() for line in GUIDE.read_text().splitlines() if line.startswith("    ")]
    return [line for line in lines if re.search(r"(^|\s)python train\.py\s", line)]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """An IsaacGymEnvs fork: upstream's file names (Ant.yaml, AntPPO.yaml) with its own values,
    and the model under assets/."""
    root = tmp_path_factory.mktemp("project")
    (root / "cfg" / "task").mkdir(parents=True)
    (root / "cfg" / "train").mkdir()
    task = (ROOT / "cfg" / "task" / "Ant.yaml").read_text()
    task = re.sub(r"(numEnvs: \$\{resolve_default:)\d+", rf"\g<1>{PROJECT_ENVS}", task)
    (root / "cfg" / "task" / "Ant.yaml").write_text(task)
    train = (ROOT / "cfg" / "train" / "AntPPO.yaml").read_text()
    train = re.sub(r"(?m)^(\s+horizon_length:).*$", rf"\1 {PROJECT_HORIZON}", train)
    train = re.sub(r"(?m)^(\s+minibatch_size:).*$", r"\1 512", train)
    (root / "cfg" / "train" / "AntPPO.yaml").write_text(train)
    (root / "assets" / "mjcf").mkdir(parents=True)
    model = (ROOT / "tasks" / "assets" / "ant.xml").read_text()
    (root / "assets" / "mjcf" / "nv_ant.xml").write_text(model)
    return root


def _run(command: str, project: Path, runs: Path, extra: list[str]) -> subprocess.CompletedProcess:
    words = shlex.split(command.replace("$PROJECT", str(project)))
    env = {}
    while "=" in words[0] and not words[0].startswith("python"):  # VAR=value prefixes
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    assert words[:2] == ["python", "train.py"], command
    return run_train(*words[2:], *extra, f"train_dir={runs}", env=env, timeout_s=600)


def test_the_guide_has_a_training_and_a_playing_command():
    commands = guide_commands()
    assert len(commands) == 2 and "test=True" in commands[1], commands


def test_the_guides_commands_train_and_play_a_projects_task(project, tmp_path):
    train, play = guide_commands()
    proc = _run(train, project, tmp_path, ["max_iterations=2"])
    assert_ok(proc)
    assert sorted(re.findall(r"^GMI (\d): node ", proc.stdout, re.M)) == ["0", "1"]
    assert f"Ant: {PROJECT_ENVS} envs, mujoco backend" in proc.stderr  # the project's numEnvs
    assert f"task Ant from {project / 'cfg' / 'task' / 'Ant.yaml'}" in proc.stderr
    assert f"train AntPPO from {project / 'cfg' / 'train' / 'AntPPO.yaml'}" in proc.stderr
    (checkpoint,) = tmp_path.glob("Ant*/nn/last_*.pth")
    frames = torch.load(checkpoint, map_location="cpu", weights_only=False)["frame"]
    assert frames == 2 * PROJECT_ENVS * PROJECT_HORIZON * 2  # 2 epochs of the project's horizon
    played = _run(
        play.replace("$CHECKPOINT", str(checkpoint)), project, tmp_path, ["max_iterations=2"]
    )
    assert_ok(played)
    assert "mean episode reward" in played.stdout and "Ant: 8 envs" in played.stderr
