"""The numerical audit (``gmi.debug.audit``) for real: two GMIs agree with a float64 recompute
to float32's precision, and a GMI whose gradient is silently off by 5 % is caught, named, and
stops the run before that epoch's checkpoint."""

from __future__ import annotations

import glob
import re

from tests.helpers import run_train

PASSED = re.compile(r"numerical audit at epoch (\d+): largest relative error ([\d.e+-]+) \((.*?)\)")


def test_the_audit_agrees_then_names_the_gmi_whose_gradient_was_corrupted(tmp_path):
    proc = run_train(
        "task=Cartpole",
        "gmi.per_gpu=2",
        "max_iterations=6",
        "gmi.debug.audit=2",
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
