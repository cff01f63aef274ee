"""Runs trained once per test session and read by tests in several files (train once, read many
times): each is a session-scoped fixture, trained the first time a test asks for it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from isaacgymenvs_gmi.runners.result import RunResult

ANT_ENVS = 768  # in total, for one GMI or split over several (tests/gmi/test_gmi_agreement.py)
ANT_EPOCHS = 60


def ant_overrides(per_gpu: int) -> list[str]:
    """Ant, 768 envs in total split over ``per_gpu`` GMIs, 60 epochs of 16 steps (737,280
    samples, 4 union minibatches of 3,072 a mini-epoch)."""
    envs = ANT_ENVS // per_gpu
    return [
        "task=Ant",
        f"gmi.per_gpu={per_gpu}",
        f"num_envs={envs}",
        f"train.params.config.minibatch_size={envs * 4}",
        f"max_iterations={ANT_EPOCHS}",
    ]


def reward_meter(summaries: Path, last: int = 10) -> float:
    """rl-games' episode-reward meter (merged across GMIs), as TensorBoard got it: its mean over
    the run's ``last`` epochs (one epoch's value is noisier)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(summaries))
    events.Reload()
    by_epoch = {e.step: e.value for e in events.Scalars("rewards/iter")}
    tail = sorted(by_epoch)[-last:]
    return sum(by_epoch[e] for e in tail) / len(tail)


@dataclass(frozen=True)
class TrainedRun:
    result: RunResult
    overrides: tuple[str, ...]  # what it was composed from (add to resume it)


@pytest.fixture(scope="session")
def ant_one_gmi(tmp_path_factory) -> TrainedRun:
    """:func:`ant_overrides` on one GMI, in this process, a checkpoint every 10 epochs."""
    from isaacgymenvs_gmi.launch import plan_run, run
    from tests.conftest import compose_config

    folder = tmp_path_factory.mktemp("ant_one_gmi")
    overrides = (
        *ant_overrides(1),
        f"train_dir={folder}",
        "train.params.config.save_frequency=10",
    )
    cfg = compose_config(*overrides)
    return TrainedRun(run(cfg, plan_run(cfg)), overrides)
