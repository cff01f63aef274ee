"""A checkpoint is refused before anything starts when training cannot resume from it or its
task does not fit (damaged records, missing resume fields, another task's shapes); a whole one
resumes and plays."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from isaacgymenvs_gmi import launch
from isaacgymenvs_gmi.config import ConfigError
from tests.conftest import compose_config

NO_GPU = (False, ("cpu",), False)


def test_a_checkpoint_of_another_task_is_refused_naming_its_shape(compose_cfg, tmp_path):
    """A state saved with another task's observation width (Cartpole: 4) played as Ant (60)."""
    from isaacgymenvs_gmi.config.checkpoint_file import METADATA_KEY

    state = {
        "model": {"running_mean_std.running_mean": torch.zeros(4)},
        METADATA_KEY: {"task": "Cartpole"},
    }
    torch.save(state, tmp_path / "cartpole.pth")
    cfg = compose_cfg("task=Ant", "test=True", f"checkpoint={tmp_path / 'cartpole.pth'}")
    with pytest.raises(ConfigError) as refused:
        launch.plan_run(cfg, platform=NO_GPU)
    assert refused.value.key == "checkpoint" and "(4,)" in str(refused.value)


@pytest.fixture(scope="module")
def cartpole_checkpoint(tmp_path_factory) -> str:
    """The last checkpoint of a 2-epoch Cartpole run in this process."""
    folder = tmp_path_factory.mktemp("checkpoint")
    cfg = compose_config("task=Cartpole", "max_iterations=2", f"train_dir={folder}")
    return launch.run(cfg, launch.plan_run(cfg, platform=NO_GPU)).checkpoint


def _edited(source: str, folder: Path, **changes) -> Path:
    """``source``'s state with ``changes`` (a value of None removes the key), saved anew."""
    from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint

    state = read_checkpoint(source)
    for key, value in changes.items():
        state.pop(key) if value is None else state.__setitem__(key, value)
    path = folder / "edited.pth"
    torch.save(state, path)
    return path


def _flipped(source: str, folder: Path) -> Path:
    """``source`` with 64 bytes of its first layer's weights inverted in place."""
    from isaacgymenvs_gmi.config.checkpoint_file import read_checkpoint

    weights = read_checkpoint(source)["model"]["a2c_network.actor_mlp.0.weight"]
    data = bytearray(Path(source).read_bytes())
    at = data.find(weights.numpy().tobytes()[:256])
    assert at > 0
    data[at : at + 64] = bytes(b ^ 0xFF for b in data[at : at + 64])
    path = folder / "flipped.pth"
    path.write_bytes(data)
    return path


BAD_CHECKPOINTS = [  # (changes to a real checkpoint, what the error says)
    ({"epoch": None, "frame": None, "optimizer": None}, "no 'epoch' count"),
    ({"epoch": "abc"}, "'epoch' is 'abc', not a count"),
    ({"epoch": True}, "'epoch' is True, not a count"),
    ({"frame": -5}, "'frame' is -5, not a count"),
    ({"optimizer": None}, "no 'optimizer' state"),
    ({"optimizer": "adam"}, "'optimizer' is not an optimizer's state dict"),
    ({"optimizer": {"state": {}, "param_groups": []}}, "'optimizer' has no 'param_groups' list"),
    ({"last_mean_rewards": "abc"}, "'last_mean_rewards' is 'abc', not a number"),
]


@pytest.mark.parametrize(("changes", "says"), BAD_CHECKPOINTS, ids=lambda v: str(v)[:40])
def test_a_checkpoint_training_cannot_resume_from_is_refused(
    compose_cfg, nothing_may_start, cartpole_checkpoint, tmp_path, changes, says
):
    """Resuming training reads epoch, frame and optimizer state; playing needs only the model."""
    path = _edited(cartpole_checkpoint, tmp_path, **changes)
    cfg = compose_cfg("task=Cartpole", f"checkpoint={path}")
    with pytest.raises(ConfigError) as refused:
        launch.plan_run(cfg, platform=NO_GPU)
    assert refused.value.key == "checkpoint", str(refused.value)
    assert says in str(refused.value) and "which resuming training reads" in str(refused.value)
    launch.plan_run(compose_cfg("task=Cartpole", "test=True", f"checkpoint={path}"), NO_GPU)


def test_a_whole_checkpoint_resumes_and_a_damaged_one_is_refused_even_to_play(
    compose_cfg, nothing_may_start, cartpole_checkpoint, tmp_path
):
    """64 flipped bytes in a tensor load without complaint from torch: the CRC-32 torch stored
    for the record says they changed."""
    plan = launch.plan_run(
        compose_cfg("task=Cartpole", f"checkpoint={cartpole_checkpoint}"), NO_GPU
    )
    assert plan.checkpoint == cartpole_checkpoint
    flipped = _flipped(cartpole_checkpoint, tmp_path)
    torch.load(flipped, weights_only=False)  # what torch alone makes of it
    for extra in ([], ["test=True"]):
        cfg = compose_cfg("task=Cartpole", *extra, f"checkpoint={flipped}")
        with pytest.raises(ConfigError) as refused:
            launch.plan_run(cfg, platform=NO_GPU)
        assert refused.value.key == "checkpoint"
        assert "damaged: record '" in str(refused.value) and "fails the CRC-32" in str(
            refused.value
        )
