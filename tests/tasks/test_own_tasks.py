"""A user's own task, outside the package: registered by a decorator in a module named with
``task_modules``, or by an installed package's entry point; its YAMLs found through
``hydra.searchpath``. The example in ``examples/pendulum`` trains end to end under GMIs on both
physics backends."""

from __future__ import annotations

import re
import subprocess
import textwrap
from pathlib import Path

import pytest

import isaacgymenvs_gmi
from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.tasks import (
    Cartpole,
    TaskLogic,
    UnknownTaskError,
    get_task_class,
    known_tasks,
    register_task,
    unregister_task,
)
from tests.helpers import assert_ok, mean_rewards, run_train

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "pendulum"
SEARCHPATH = f"hydra.searchpath=[file://{EXAMPLE / 'cfg'}]"
SHORT = ["task.env.episodeLength=32", "max_iterations=6", "experiment=own"]


class _Mine(Cartpole):
    name = "MineForTests"


def test_register_as_decorator_and_call_and_forget():
    register_task("MineForTests")(_Mine)
    try:
        assert get_task_class("MineForTests") is _Mine
        assert "MineForTests" in known_tasks()
        register_task("MineForTests", _Mine)  # the same class again: fine (modules re-imported)
    finally:
        unregister_task("MineForTests")
    with pytest.raises(UnknownTaskError, match="available: .*Cartpole"):
        get_task_class("MineForTests")


def test_suite_names_and_taken_names_are_refused():
    with pytest.raises(ValueError, match="task of the suite"):
        register_task("Ant", _Mine)
    register_task("MineForTests", _Mine)
    try:

        class Other(Cartpole):
            pass

        with pytest.raises(ValueError, match="already registered to .*_Mine"):
            register_task("MineForTests", Other)
    finally:
        unregister_task("MineForTests")


def test_public_names_load_on_first_use():
    assert isaacgymenvs_gmi.TaskLogic is TaskLogic
    assert isaacgymenvs_gmi.register_task is register_task
    with pytest.raises(AttributeError):
        isaacgymenvs_gmi.not_a_name  # noqa: B018


def test_a_task_module_that_does_not_import_is_refused_before_start(compose_cfg):
    cfg = compose_cfg("task=Cartpole", "task_modules=[no_such_pkg.tasks]")
    with pytest.raises(ConfigError, match=r"^task_modules='no_such_pkg.tasks': cannot be imp"):
        plan_run(cfg)
    with pytest.raises(ConfigError, match=r"^task_modules=.*list of module names"):
        plan_run(compose_cfg("task=Cartpole", "task_modules=[1]"))


def test_an_unknown_task_names_the_registered_ones(compose_cfg, monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLE))
    cfg = compose_cfg("task=Cartpole", "task_modules=[pendulum_task]", "task.name=Nope")
    with pytest.raises(ConfigError, match=r"^task='Nope': unknown task; available: .*Pendulum"):
        plan_run(cfg)


def _train(tmp_path: Path, *args: str, pythonpath: list[Path]) -> subprocess.CompletedProcess:
    return run_train(
        "task=Pendulum", SEARCHPATH, "gmi.per_gpu=2", *SHORT, *args, f"train_dir={tmp_path}",
        pythonpath=pythonpath, timeout_s=600,
    )  # fmt: skip


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_the_example_task_trains_under_two_gmis(tmp_path, backend):
    proc = _train(
        tmp_path, "task_modules=[pendulum_task]", f"sim_backend={backend}", pythonpath=[EXAMPLE]
    )
    assert_ok(proc)
    assert sorted(re.findall(r"^GMI (\d): node ", proc.stdout, re.M)) == ["0", "1"]
    assert f"Pendulum: 256 envs, {backend} backend, 3 obs / 1 actions" in proc.stderr
    rewards = mean_rewards(proc.stdout)
    assert rewards and all(r < 0 for r in rewards), proc.stdout  # -(angle^2 + ...) per step
    assert list(tmp_path.glob("own*/nn/last_own_ep_6_*.pth"))


def test_an_installed_packages_entry_point_makes_the_task_known(tmp_path):
    """An installed distribution is a ``*.dist-info`` folder on the path: written here for the
    example package, exactly what ``pip install examples/pendulum`` leaves behind."""
    site = tmp_path / "site"
    info = site / "pendulum_task-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pendulum-task\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [isaacgymenvs_gmi.tasks]
            Pendulum = pendulum_task:Pendulum
            """
        )
    )
    proc = _train(tmp_path / "runs", "max_iterations=2", pythonpath=[site, EXAMPLE])
    assert_ok(proc)
    assert "Pendulum: 256 envs, mujoco backend" in proc.stderr
