"""Start-up: time from launching ``train.py`` to its first epoch line, against what a bare import
of the libraries costs on this machine in the same run (ratios; absolute seconds mean little on a
shared VM).

- Ant, C engine, 1 GMI, warm compile cache  /  ``python -c "import torch, jax, mujoco, rl_games"``
  (target <= 1.5);
- Ant on MJX, warm cache / cold cache (target <= 0.3);
- Ant, C engine, 3 GMIs / 1 GMI, warm (target <= 1.6; three processes importing at once on two
  cores already cost about 1.5x).

Each figure is the median of ``--repeats`` launches; every run also prints its own start-up line
(where the seconds went), kept in the JSON.

    python bench/startup.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.common import (  # noqa: E402
    ROOT,
    STARTUP_LINE,
    epoch_times,
    first_match,
    median,
    run_logged,
    write_result,
)

TARGETS = {"c_warm_over_bare_import": 1.5, "mjx_warm_over_cold": 0.3, "three_over_one": 1.6}


def time_to_first_epoch(args: list[str], cache: Path, out: Path) -> tuple[float, str]:
    """Seconds from launch to the first epoch line, and the run's own start-up line."""
    cmd = [
        sys.executable,
        str(ROOT / "train.py"),
        "task=Ant",
        "max_iterations=3",
        f"gmi.compile_cache={cache}",
        f"train_dir={out}",
        *args,
    ]
    rows, code, _ = run_logged(cmd, out / "run.log", limit_s=600)
    epochs = epoch_times(rows)
    if code != 0 or 1 not in epochs:
        raise RuntimeError(f"{' '.join(cmd[1:])}: exit {code}, no first epoch")
    return epochs[1], first_match(rows, STARTUP_LINE) or ""


def bare_import() -> float:
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "import torch, jax, mujoco, rl_games"], check=True)
    return time.monotonic() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    c_args = ["num_envs=256", "train.params.config.minibatch_size=2048"]
    mjx_args = ["sim_backend=mjx", "num_envs=64", "train.params.config.minibatch_size=512"]
    runs: dict[str, list[float]] = {}
    lines: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        root = Path(tmp)
        warm = root / "warm"
        # make the warm cache (3 GMIs compile their own programs: fewer threads each)
        for extra in (c_args, [*c_args, "gmi.per_gpu=3"], mjx_args):
            time_to_first_epoch(extra, warm, root)
        for i in range(args.repeats):
            for label, extra, cache in (
                ("bare_import", None, None),
                ("c_1gmi_warm", c_args, warm),
                ("c_3gmi_warm", [*c_args, "gmi.per_gpu=3"], warm),
                ("mjx_warm", mjx_args, warm),
                ("mjx_cold", mjx_args, root / f"cold{i}"),
            ):
                if extra is None:
                    runs.setdefault(label, []).append(bare_import())
                    continue
                seconds, line = time_to_first_epoch(extra, cache, root)
                runs.setdefault(label, []).append(seconds)
                lines.setdefault(label, line)
                print(f"{label}: {seconds:.2f} s  {line}", flush=True)
    med = {k: median(v) for k, v in runs.items()}
    ratios = {
        "c_warm_over_bare_import": med["c_1gmi_warm"] / med["bare_import"],
        "mjx_warm_over_cold": med["mjx_warm"] / med["mjx_cold"],
        "three_over_one": med["c_3gmi_warm"] / med["c_1gmi_warm"],
    }
    for name, value in ratios.items():
        verdict = "meets" if value <= TARGETS[name] else "misses"
        print(f"{name}: {value:.2f} (target <= {TARGETS[name]}: {verdict})")
    write_result(
        "startup",
        {
            "command": "python bench/startup.py --repeats " + str(args.repeats),
            "median_s": {k: round(v, 2) for k, v in med.items()},
            "runs_s": {k: [round(x, 2) for x in v] for k, v in runs.items()},
            "ratios": {k: round(v, 3) for k, v in ratios.items()},
            "targets": TARGETS,
            "startup_lines": lines,
        },
    )


if __name__ == "__main__":
    main()
