"""What must agree across GMIs does, checked inside real multi-GMI runs."""

from __future__ import annotations

import re

from tests.gmi.test_gmi_runtime import progress, train

CRITIC = (
    "+train.params.config.central_value_config={minibatch_size:512,mini_epochs:4,"
    "learning_rate:5e-4,lr_schedule:linear,clip_value:true,normalize_input:true,"
    "truncate_grads:true,network:{name:actor_critic,central_value:true,"
    "mlp:{units:[32,32],activation:elu,d2rl:false,initializer:{name:default},"
    "regularizer:{name:None}}}}"
)
IDENTICAL = re.compile(r"replicas identical at '([^']+)' on (\d+) GMIs: ([0-9a-f ]+)$", re.M)


def test_weights_and_normalisers_identical_after_20_updates_with_a_central_value_net(tmp_path):
    """Two GMIs, actor-critic plus an asymmetric critic: the run fingerprints (a hash of every
    parameter and buffer, normaliser statistics included) all replicas before epochs 1, 11, 21
    and at the end, and stops with an error if any GMI differs."""
    proc = train("task=Cartpole", "gmi.per_gpu=2", "max_iterations=21", CRITIC, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    checks = {what: (int(n), prints) for what, n, prints in IDENTICAL.findall(proc.stdout)}
    assert set(checks) == {
        "initial weights",
        "after 10 epochs",
        "after 20 epochs",
        "end of training, 21 epochs",
    }, proc.stdout[-3000:]
    assert all(n == 2 for n, _ in checks.values())
    assert len({prints for _, prints in checks.values()}) == 4  # the weights did move
    # actor and critic: two modules, two 64-bit words each
    assert all(len(prints.split()) == 4 for _, prints in checks.values())
    synced = "normaliser statistics synchronised across GMIs: observations, critic states, values"
    assert synced in proc.stdout
    rows = progress(proc.stdout)
    assert len(rows) == 21 and rows[-1][2] > rows[0][2]  # and it learns
