"""The numerical audit (``gmi.debug.audit``) for real: two GMIs agree with a float64 recompute
to float32's precision, and a GMI whose gradient is silently off by 5 % is caught, named, and
stops the run before that epoch's checkpoint. The same run counts its collectives: one per
minibatch, the gradient all-reduce carrying the KL, plus a few per mini-epoch and epoch."""

from __future__ import annotations

import glob
import re

from tests.helpers import run_train

PASSED = re.compile(r"numerical audit at epoch (\d+): largest relative error ([\d.e+-]+) \((.*?)\)")
SPLIT = re.compile(r"^epoch 1 split .* \((\d+) collectives\)$", re.M)
MINIBATCHES = 4 * 8  # 512 envs x 16 steps in minibatches of 2,048, 8 mini-epochs (CartpolePPO)


def test_the_audit_agrees_then_names_the_gmi_whose_gradient_was_corrupted(tmp_path):
    proc = run_train(
        "task=Cartpole",
        "gmi.per_gpu=2",
        "max_iterations=6",
        "gmi.debug.audit=2",
        "train.params.config.minibatch_size=2048",
        "train.params.config.save_frequency=1",
        f"train_dir={tmp_path}",
        env={"ISAACGYMENVS_GMI_FAULT": "1:corrupt:4"},  # GMI 1's gradients off by 5 %, epoch 4
    )
    out = proc.stdout + proc.stderr
    passed = PASSED.findall(out)
    assert [int(epoch) for epoch, *_ in passed] == [2], out[-3000:]
    assert float(passed[0][1]) < 1e-5  # float32 against float64, same weights and inputs
    assert proc.returncode != 0
    assert (
        "numerical audit at epoch 4: GMI 1's gradient of a2c_network." in out
        and "tolerance 1e-03; stopped before this epoch's checkpoint" in out
    ), out[-3000:]
    saved = glob.glob(str(tmp_path / "*" / "nn" / "*.pth"))
    assert saved and not [f for f in saved if "_ep_4_" in f], saved
    (collectives,) = SPLIT.findall(proc.stdout)  # 3 a minibatch before they were combined
    assert MINIBATCHES <= int(collectives) < 2 * MINIBATCHES, collectives
