"""The package as users install it: a wheel built from this checkout, installed (not editable)
into a fresh environment, run from a folder outside the checkout. The bundled configs and models
travel as package data; ``python -m isaacgymenvs_gmi``, the ``isaacgymenvs-gmi`` script, ``make()``
and the planner's command line work there.

The fresh environment borrows the test environment's installed dependencies through a ``.pth``
line (no registry is needed), but not its editable install of this project: a path listed in a
``.pth`` file is added to ``sys.path`` without running the ``.pth`` files inside it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.helpers import assert_ok
from tests.speed import budget

ROOT = Path(__file__).resolve().parents[1]


def _sources(dest: Path) -> None:
    """The checkout's files that git tracks or would track (no build outputs, no venv)."""
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh environment with the wheel installed."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs the git checkout to build from")
    work = tmp_path_factory.mktemp("wheel")
    _sources(work / "src")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(work / "dist"),
            str(work / "src"),
        ],
        check=True,
        timeout=budget(300),
    )
    (wheel,) = (work / "dist").glob("isaacgymenvs_gmi-*.whl")
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(work / "env")], check=True)
    python = work / "env" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"])
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        check=True,
        timeout=budget(300),
    )
    return python


def _run(python: Path, cwd: Path, *args: str, timeout: float = 240):
    return subprocess.run(
        [str(python), *args], cwd=cwd, capture_output=True, text=True, timeout=budget(timeout)
    )


def test_the_installed_package_is_the_wheel_not_the_checkout(installed, tmp_path):
    proc = _run(installed, tmp_path, "-c", "import isaacgymenvs_gmi as g; print(g.__file__)")
    assert proc.returncode == 0, proc.stderr
    assert "site-packages" in proc.stdout and str(ROOT) not in proc.stdout


def test_python_dash_m_trains_a_packed_sweep_outside_the_checkout(installed, tmp_path):
    """Hydra finds ``hydra/launcher=gmi`` in the installed wheel; each job runs from it too."""
    proc = _run(
        installed,
        tmp_path,
        "-m",
        "isaacgymenvs_gmi",
        "-m",
        "task=Cartpole",
        "seed=1,2",
        "hydra/launcher=gmi",
        "num_envs=32",
        "max_iterations=2",
        "train.params.config.minibatch_size=256",
        "hydra.sweep.dir=sweep",
    )
    assert_ok(proc)
    jobs = json.loads((tmp_path / "sweep" / "summary.json").read_text())
    assert [j["status"] for j in jobs] == ["done", "done"]
    for job in (0, 1):  # train_dir=runs, inside each job's folder
        folder = tmp_path / "sweep" / str(job)
        assert (
            "configs: task Cartpole from bundled task/Cartpole.yaml"
            in (folder / "job.log").read_text()
        )
        assert list((folder / "runs").glob("*/nn/last_*.pth"))


def test_the_console_script_runs_two_gmis(installed, tmp_path):
    script = installed.parent / "isaacgymenvs-gmi"
    proc = subprocess.run(
        [
            str(script),
            "task=Cartpole",
            "num_envs=32",
            "max_iterations=1",
            "gmi.per_gpu=2",
            "train.params.config.minibatch_size=256",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=budget(240),
    )
    assert_ok(proc)
    assert "32 envs per GMI x 2 GMIs" in proc.stderr


def test_make_and_compose_config_work_outside_the_checkout(installed, tmp_path):
    code = (
        "import isaacgymenvs_gmi as g\n"
        "cfg = g.compose_config('task=Ant')\n"
        "assert cfg.task.name == 'Ant' and cfg.gmi.per_gpu == 1, cfg.task.name\n"
        "env = g.make(seed=0, task='Cartpole', num_envs=4, sim_device='cpu', rl_device='cpu')\n"
        "obs = env.reset()['obs']\n"
        "print(tuple(obs.shape))\n"
    )
    proc = _run(installed, tmp_path, "-c", code)
    assert_ok(proc)
    assert proc.stdout.strip().endswith("(4, 4)")


def test_the_planner_command_line_composes_outside_the_checkout(installed, tmp_path):
    # a bad value is refused after composing the config, before any trial starts
    proc = _run(
        installed,
        tmp_path,
        "-m",
        "isaacgymenvs_gmi.planner",
        "task=Cartpole",
        "gmi.plan.max_per_gpu=0",
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "gmi.plan.max_per_gpu" in proc.stderr
