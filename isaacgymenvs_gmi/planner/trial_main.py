"""A planner trial's own process: ``python -m isaacgymenvs_gmi.planner.trial_main SPEC OUT``.

Runs the config in ``SPEC`` (JSON: the resolved config, the device's cores, the warm-up epochs)
as ``train.py`` would and writes to ``OUT`` (JSON, whole or not at all) ``{"ok": true, "rate":
...}`` (env steps/s of every GMI; predictions/s when serving) or ``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import json
import logging
import os
import statistics
import sys
from pathlib import Path

from isaacgymenvs_gmi.atomic_file import write_atomically


def measured_rate(result, rate: str, warmup_epochs: int) -> float:
    """Throughput of a finished trial run: the median epoch's env steps/s after warm-up (one
    stalled epoch does not decide), or the run's ``rate`` entry where the mode names one."""
    if rate:
        return float(result.rates[rate])
    rates = result.epoch_rates[warmup_epochs:]
    if not rates:
        raise RuntimeError(f"no epoch after the {warmup_epochs} warm-up epoch(s) was measured")
    return statistics.median(rates)


def _write(path: Path, payload: dict) -> None:
    write_atomically(path, json.dumps(payload).encode())


def main(argv: list[str]) -> int:
    spec_path, out_path = Path(argv[1]), Path(argv[2])
    spec = json.loads(spec_path.read_text())
    if spec.get("cores"):
        os.sched_setaffinity(0, spec["cores"])
    logging.basicConfig(level=logging.WARNING, format="[%(name)s] %(message)s")
    from omegaconf import OmegaConf

    from isaacgymenvs_gmi.launch import plan_run, run
    from isaacgymenvs_gmi.runners import mode_named

    cfg = OmegaConf.create(spec["config"])
    try:
        plan = plan_run(cfg)
        result = run(cfg, plan)
        if result is None or result.stopped_by is not None:
            raise RuntimeError("the trial run was stopped before it finished")
        rate = measured_rate(result, mode_named(plan.mode).rate, int(spec["warmup_epochs"]))
    except BaseException as err:  # noqa: BLE001 - every failure is reported to the planner
        _write(out_path, {"ok": False, "error": f"{type(err).__name__}: {err}"[:2000]})
        return 1
    _write(out_path, {"ok": True, "rate": rate, "epoch_rates": result.epoch_rates})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
