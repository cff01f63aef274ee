"""Helpers shared by the benchmarks: config composition, machine facts, result files."""

from __future__ import annotations

import json
import os
import platform
import re
import signal
import statistics
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def compose(*overrides: str):
    """The composed training config, as ``python train.py <overrides>`` would see it."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from isaacgymenvs_gmi.config import register_resolvers

    register_resolvers()
    with initialize_config_dir(config_dir=str(ROOT / "cfg"), version_base="1.1"):
        return hydra_compose("config", overrides=list(overrides))


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "cpu": platform.processor() or platform.machine(),
        "cores": len(os.sched_getaffinity(0)),
        "python": platform.python_version(),
    }
    try:
        with open("/proc/cpuinfo") as f:
            names = [ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")]
        if names:
            info["cpu"] = names[0]
    except OSError:
        pass
    try:
        info["gpu"] = (
            subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=10,
            ).stdout.strip()
            or None
        )
    except (OSError, subprocess.SubprocessError):
        info["gpu"] = None
    import jax
    import mujoco
    import torch

    info.update(torch=torch.__version__, jax=jax.__version__, mujoco=mujoco.__version__)
    return info


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "machine": machine(),
        **payload,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")
    return path


def read_scalars(summaries: str | Path, tag: str) -> list[tuple[int, float]]:
    """(step, value) of TensorBoard scalar ``tag`` in the event files of folder ``summaries``;
    [] where the tag was never written."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(summaries))
    events.Reload()
    if tag not in events.Tags()["scalars"]:
        return []
    return [(e.step, float(e.value)) for e in events.Scalars(tag)]


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def plot_reward_curves(panels: dict[str, list], path: Path, subtitle: str) -> None:
    """One panel per run: mean episode reward against wall time, from ``RunResult.history``
    rows (frames, wall time s, mean reward); saved as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 3.6), squeeze=False)
    for ax, (name, history) in zip(axes[0], panels.items(), strict=True):
        ax.plot([t for _, t, _ in history], [r for _, _, r in history])
        ax.set(title=f"{name} ({subtitle})", xlabel="wall time [s]", ylabel="mean episode reward")
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path.relative_to(ROOT)}")


# --- runs of train.py, their lines time-stamped ----------------------------------------------
STARTUP_LINE = re.compile(r"start-up [\d.]+ s to the first epoch.*")  # the run's own account
EPOCH_LINE = re.compile(r"epoch:?\s+(\d+)/(\d+)")  # GMI 0's progress line (or rl-games')


def timed_sweep(cmd: list[str], name: str, log: Path, hide: Path) -> tuple[float, str]:
    """Run the sweep ``cmd`` from the repo root, its output kept in ``log``; returns its wall
    time in seconds and the command as shown (``hide`` written OUT), or exits naming ``name``
    when it failed."""
    shown = " ".join(cmd[1:]).replace(str(hide), "OUT")
    print(f"== {name}: {shown}", flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    log.write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0:
        raise SystemExit(f"{name} sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return wall, shown


def run_logged(
    cmd: list[str], log_path: Path, limit_s: float, env: dict[str, str] | None = None
) -> tuple[list, int, float]:
    """Runs ``cmd`` (its own process group; ``env`` added to this environment), logging its
    lines with their times; SIGINT at ``limit_s`` (the graceful stop), SIGKILL 45 s later.
    Returns ((t, line) rows, exit code, start time)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    rows: list[tuple[float, str]] = []

    def read() -> None:
        assert proc.stdout is not None
        with open(log_path, "w") as log:
            for line in proc.stdout:
                t = time.monotonic() - t0
                rows.append((t, line.rstrip("\n")))
                log.write(f"{t:8.2f} {line}")
                log.flush()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=45)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    reader.join(timeout=10)
    return rows, proc.returncode, t0


def epoch_times(rows: list[tuple[float, str]]) -> dict[int, float]:
    """Epoch number -> seconds after start at which its line was printed (GMI 0's line)."""
    times: dict[int, float] = {}
    for t, line in rows:
        match = EPOCH_LINE.search(line)
        if match and int(match.group(1)) not in times:
            times[int(match.group(1))] = t
    return times


def first_match(rows: list[tuple[float, str]], pattern: re.Pattern) -> str | None:
    """The first match of ``pattern`` in the ``(t, line)`` rows of :func:`run_logged`."""
    return next((m.group(0) for _, line in rows if (m := pattern.search(line))), None)
