"""``bench/gpu_headline.py`` runs end to end on the CPU (``--dry-run``: tiny sizes), so the GPU
window's first step cannot rot between the sessions that have a GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.speed import budget

ROOT = Path(__file__).resolve().parents[1]


def test_the_headline_dry_run_trains_one_and_three_gmis_and_reports_them(tmp_path):
    """Named runs (``--runs NAME:K[:WORDS]``) carry their environment and overrides; each run
    reports its epoch split per GMI, its skipped steps and its numerical audits."""
    three_spec = "three:3:GMI_BENCH_MARK=1 gmi.timeout_s=31 gmi.debug.audit=2"
    proc = subprocess.run(
        [sys.executable, "bench/gpu_headline.py", "--dry-run", "--out", str(tmp_path)]
        + ["--runs", "one:1", three_spec],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=budget(300),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads((tmp_path / "gpu_headline_dry_run.json").read_text())
    one, three = result["runs"]
    assert (one["gmis"], three["gmis"]) == (1, 3)
    assert three["environment"] == {"GMI_BENCH_MARK": "1"} and one["environment"] == {}
    assert "gmi.timeout_s=31" in three["command"] and "timeout_s" not in one["command"]
    assert (one["total_envs"], three["envs_per_gmi"]) == (64, 22)  # ceil(64 / 3)
    for run in (one, three):
        assert run["exit_code"] == 0 and run["epochs_done"] == 3, run
        assert run["env_steps_per_s"] > 0 and run["startup_s"] > 0
        assert run["non_finite_reward"] is False
        assert run["startup_warm_s"] > 0 and run["warm_exit_code"] == 0, run
        assert "loaded from the compile cache, 0 compiled" in run["startup_warm_line"], run
    assert three["env_steps_per_s_vs_first"] > 0
    assert len(three["stage_split_s"]["update"]) == 3 and three["skipped_steps"] == 0
    assert [a["epoch"] for a in three["audits"]] == [2] and three["audits"][0]["passed"]
    assert (tmp_path / "gpu_headline_dry_run.png").stat().st_size > 0
    assert (tmp_path / "headline_three.log").read_text().count("epoch") >= 3
    assert "three / one env steps/s" in proc.stdout
