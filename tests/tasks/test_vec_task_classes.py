"""Any class with IsaacGymEnvs' VecTask interface trains under GMIs as it is: a user's own
(registered with ``task_modules``) and, where ``isaacgymenvs`` is importable, a task of its
``isaacgym_task_map`` (tested with a stand-in ``isaacgymenvs`` package on the path)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.sim.foreign import ForeignVecTask, build_vec_task
from isaacgymenvs_gmi.tasks import get_task_class, register_task, unregister_task
from tests.helpers import assert_ok, mean_rewards, run_train
from tests.tasks.upstream_style_task import (
    write_configs,
    write_standin_isaacgymenvs,
    write_user_module,
)

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "cfg" / "train" / "CartpolePPO.yaml"


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """A stand-in ``isaacgymenvs``, a user's task package, and YAMLs for both task names."""
    root = tmp_path_factory.mktemp("upstream")
    write_standin_isaacgymenvs(root / "standin")
    write_user_module(root / "user", "MyPointMass")
    for name in ("PointMass", "MyPointMass"):
        write_configs(root / "cfg", name, TEMPLATE)
    return root


def _train(tree: Path, tmp_path: Path, *args: str, paths: list[str]) -> str:
    proc = run_train(
        f"hydra.searchpath=[file://{tree / 'cfg'}]", *args, "max_iterations=4",
        f"train_dir={tmp_path}", pythonpath=[tree / p for p in paths], timeout_s=600,
    )  # fmt: skip
    assert_ok(proc)
    return proc.stdout


def test_a_registered_vec_task_class_trains_under_two_gmis(tree, tmp_path):
    out = _train(
        tree,
        tmp_path,
        "task=MyPointMass",
        "task_modules=[my_torch_tasks]",
        "gmi.per_gpu=2",
        paths=["user"],
    )
    assert sorted(re.findall(r"^GMI (\d): node ", out, re.M)) == ["0", "1"]
    rewards = mean_rewards(out)
    assert len(rewards) >= 3 and all(r < 0 for r in rewards), out  # -distance per step


def test_a_vec_task_class_trains_in_async_mode(tree, tmp_path):
    out = _train(
        tree,
        tmp_path,
        "task=MyPointMass",
        "task_modules=[my_torch_tasks]",
        "gmi.per_gpu=2",
        "gmi.mode=async",
        paths=["user"],
    )
    assert "produced" in out and "NaN" not in out


def test_a_name_from_the_standin_isaacgymenvs_task_map_trains(tree, tmp_path):
    """``task=PointMass`` is in no suite and no registry: found in (stand-in)
    ``isaacgymenvs.tasks.isaacgym_task_map``."""
    out = _train(tree, tmp_path, "task=PointMass", "gmi.per_gpu=2", paths=["standin"])
    assert len(mean_rewards(out)) >= 3


def test_episode_bookkeeping_follows_the_tasks_own_resets(tree, monkeypatch):
    monkeypatch.syspath_prepend(str(tree / "user"))
    import my_torch_tasks  # noqa: F401 - registers MyPointMass

    config = {"name": "MyPointMass", "env": {"numEnvs": 8, "episodeLength": 5, "maxPush": 2.0}}
    config["sim"] = {"dt": 0.05}
    env = ForeignVecTask(build_vec_task(get_task_class("MyPointMass"), config, "cpu", "cpu"))
    obs = env.reset()["obs"]
    assert obs.shape == (8, 4) and env.num_obs == 4 and env.num_actions == 2
    assert env.episode_totals() == (None, None)
    rewards = []
    for step in range(4):  # episodes of 5 steps end at progress 4: the 4th step
        _, rew, reset, extras = env.step(torch.zeros(8, 2))
        rewards.append(rew)
        assert torch.equal(extras["episode_length"], torch.full((8,), step + 1.0))
    assert reset.all() and extras["time_outs"].all()
    assert torch.allclose(extras["episode_return"], torch.stack(rewards).sum(0))
    mean_return, mean_length = env.episode_totals()
    assert mean_length == 4.0 and mean_return == pytest.approx(
        float(torch.stack(rewards).sum(0).mean())
    )
    _, _, _, extras = env.step(torch.zeros(8, 2))  # a fresh episode in every env
    assert torch.equal(extras["episode_length"], torch.ones(8))
    unregister_task("MyPointMass")


def test_a_class_of_neither_kind_is_refused(compose_cfg):
    with pytest.raises(TypeError, match="neither a TaskLogic subclass nor a class"):
        register_task("NotATask", dict)


def test_a_vec_task_that_cannot_be_built_is_refused_before_start(tree, compose_cfg, monkeypatch):
    monkeypatch.syspath_prepend(str(tree / "user"))
    register_task("BrokenPointMass", _broken_class(tree, monkeypatch))
    try:
        cfg = compose_cfg("task=Cartpole", "task.name=BrokenPointMass")
        with pytest.raises(ConfigError, match=r"^task='BrokenPointMass': .* could not be built"):
            plan_run(cfg)
    finally:
        unregister_task("BrokenPointMass")


def _broken_class(tree: Path, monkeypatch) -> type:
    from my_torch_tasks.point_mass import PointMass

    class BrokenPointMass(PointMass):
        def __init__(self, cfg, **kwargs):
            raise RuntimeError("no sim for you")

    return BrokenPointMass
