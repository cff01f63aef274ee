"""What must agree across GMIs does, checked inside real multi-GMI runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.gmi.test_gmi_runtime import progress, train
from tests.helpers import assert_ok, fingerprints
from tests.shared_runs import ant_overrides, reward_meter

CRITIC = (
    "+train.params.config.central_value_config={minibatch_size:512,mini_epochs:4,"
    "learning_rate:5e-4,lr_schedule:linear,clip_value:true,normalize_input:true,"
    "truncate_grads:true,network:{name:actor_critic,central_value:true,"
    "mlp:{units:[32,32],activation:elu,d2rl:false,initializer:{name:default},"
    "regularizer:{name:None}}}}"
)


def test_weights_and_normalisers_identical_after_20_updates_with_a_central_value_net(tmp_path):
    """Two GMIs, actor-critic plus an asymmetric critic: the run fingerprints (a hash of every
    parameter and buffer, normaliser statistics included, and of the optimizer's state) all
    replicas before epochs 1, 11, 21 and at the end, and stops with an error if any GMI
    differs."""
    proc = train("task=Cartpole", "gmi.per_gpu=2", "max_iterations=21", CRITIC, tmp_path=tmp_path)
    assert_ok(proc)
    checks = fingerprints(proc.stdout)
    assert set(checks) == {
        "initial weights",
        "after 10 epochs",
        "after 20 epochs",
        "end of training, 21 epochs",
    }, proc.stdout[-3000:]
    assert all(n == 2 for n, _ in checks.values())
    assert len({prints for _, prints in checks.values()}) == 4  # the weights did move
    # actor-critic model, central value critic and the optimizer's state, labelled, 128 bits each
    labelled = re.compile(r"^model=[0-9a-f]{32}, critic=[0-9a-f]{32}, optimizer=[0-9a-f]{32}$")
    assert all(labelled.match(prints) for _, prints in checks.values()), checks
    synced = (
        "normaliser statistics synchronised across GMIs: "
        "observations, critic states, values, advantages"
    )
    assert synced in proc.stdout
    rows = progress(proc.stdout)
    assert len(rows) == 21 and rows[-1][2] > rows[0][2]  # and it learns


def _ant_three_gmis(tmp_path) -> float:
    """:func:`tests.shared_runs.ant_overrides` on 3 GMIs: the reward meter at the end."""
    proc = train(
        *ant_overrides(3),
        "train.params.config.save_frequency=0",
        tmp_path=tmp_path,
        timeout=600,
    )
    assert_ok(proc)
    (summaries,) = (tmp_path / "runs").glob("*/summaries")
    return reward_meter(summaries)


@pytest.mark.slow
def test_three_gmis_learn_ant_as_well_as_one_at_equal_samples(tmp_path, ant_one_gmi):
    """Budget: about 2 minutes on 2 cores. The reward meter over the last 10 epochs, three GMIs
    against one. One seed proves comparable learning, not equality: over 5 seeds at this budget
    (bench/learning_parity.py, the meter at epoch 60) one GMI scored 242-332 and three GMIs
    279-293, per-seed ratios 0.84-1.21 (a standard deviation of about 0.14); a run of this test
    on another machine scored 346 and 265 at epoch 60 (0.77), and runs the suite starts warm
    (tests/warm_start.py) drift from cold ones at float rounding, as machines do. The bar, 0.65x
    one GMI, is more than 2.5 of those deviations below the mean ratio (1.03), and far above an
    Ant that does not learn (about 10 here). A wrong merge that still learns needs an exact check
    on identical data, which a bar over one seed cannot be; the ratio over seeds, with its
    interval, is bench/learning_parity.py's."""
    summaries = Path(ant_one_gmi.result.experiment_dir) / "summaries"  # shared with tests/rl
    one, three = reward_meter(summaries), _ant_three_gmis(tmp_path)
    assert one > 150, one
    assert three >= 0.65 * one, (three, one)
