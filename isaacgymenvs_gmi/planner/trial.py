"""One trial of the planner: a short real run of a candidate, in processes of its own.

The candidate's config (a few epochs, a throw-away run folder, one device) is planned here first,
so a configuration the launcher refuses is recorded without starting anything. Then
:mod:`.trial_main` runs it as ``train.py`` would, in a new process group, while this side watches
its memory (peak kept; above the cap: out of memory), its clock (too slow: hanging) and its end
(a failure recorded with its reason).

A trial is stopped with SIGTERM twice (the launcher passes the first to its GMIs, kills them on
the second), then its whole group is killed, so no process outlives it. An OOM or MPS fault can
poison a CUDA context, which is why trials never run in the planner's own process.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.plan import PlanSettings
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.runners import chosen_mode

from .candidates import Request, apply
from .memory import host_sampler
from .search import Candidate, Profile

POLL_S = 0.25
MEMORY_EVERY_S = 0.5
STOP_GRACE_S = 5.0
OOM_MARKS = (
    "RESOURCE_EXHAUSTED",
    "out of memory",
    "OutOfMemoryError",
    "MemoryError",
    "cudaErrorMemoryAllocation",
)


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of one search shares."""

    cfg: DictConfig  # the user's composed config (``auto`` values still in it)
    request: Request
    settings: PlanSettings  # gmi.plan.*
    memory_cap_mb: float
    cores: tuple[int, ...] | None = None  # the trial device's cores (CPU); None: this process's
    memory: Callable[[int], Callable[[], float]] = host_sampler  # pgid -> memory sampler (MiB)
    environ: Mapping[str, str] | None = None  # extra environment variables for trials


def trial_config(setup: TrialSetup, cand: Candidate, run_dir: str) -> DictConfig:
    """The config a trial of ``cand`` runs: the candidate on one device for a few epochs, its
    files in ``run_dir``, no checkpoint loaded or played."""
    out = apply(setup.cfg, cand, setup.request)
    with open_dict(out):
        out.gmi.num_gpus = 1
        out.max_iterations = setup.settings.epochs
        out.train_dir = run_dir
        out.experiment = "plan_trial"
        out.test = False
        out.checkpoint = ""
        out.wandb_activate = False
        horizon = int(OmegaConf.select(out, "train.params.config.horizon_length"))
        mode = chosen_mode(out, str(out.gmi.mode).strip().lower())
        for key, value in mode.trial_overrides(setup.settings.epochs * horizon).items():
            OmegaConf.update(out, key, value, merge=True)
        OmegaConf.update(out, "train.params.config.save_frequency", 0, merge=False)
    return out


def run_trial(setup: TrialSetup, cand: Candidate, seconds: float) -> Profile:
    """Run ``cand`` for at most ``seconds`` (and ``gmi.plan.timeout_s``); what it measured."""
    limit = min(float(setup.settings.timeout_s), seconds)
    with tempfile.TemporaryDirectory(prefix="gmi-plan-") as tmp:
        cfg = trial_config(setup, cand, str(Path(tmp) / "runs"))
        try:
            with _quiet_planning():
                plan_run(cfg)
        except ConfigError as err:
            return Profile.failed(f"refused: {err}")
        spec, out, log_path = Path(tmp) / "spec.json", Path(tmp) / "out.json", Path(tmp) / "log"
        config = OmegaConf.to_container(cfg, resolve=True)
        cores = list(setup.cores) if setup.cores else None
        job = {"config": config, "cores": cores, "warmup_epochs": setup.settings.warmup_epochs}
        spec.write_text(json.dumps(job))
        start = time.monotonic()
        with open(log_path, "wb") as log_file:
            proc = subprocess.Popen(
                [sys.executable, "-m", "isaacgymenvs_gmi.planner.trial_main", str(spec), str(out)],
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: watched and stopped as one
                env={**os.environ, **(setup.environ or {})},
            )
            try:
                peak, stopped = _watch(proc, setup, limit)
            finally:
                stop_group(proc)
        seconds_taken = time.monotonic() - start
        if stopped:
            return Profile.failed(
                stopped.format(limit=limit, peak=peak, cap=setup.memory_cap_mb), seconds_taken
            )
        report = {}
        with contextlib.suppress(OSError, ValueError):
            report = json.loads(out.read_text())
        if proc.returncode != 0 or not report.get("ok"):
            reason = _failure(proc.returncode, report, log_path.read_text(errors="replace"))
            return Profile.failed(reason, seconds_taken)
        return Profile(True, float(report["rate"]), peak, seconds=seconds_taken)


@contextlib.contextmanager
def _quiet_planning():
    """Planning a candidate repeats what planning the request said (device fallbacks, ignored
    keys): say it once."""
    package = logging.getLogger("isaacgymenvs_gmi")
    level = package.level
    package.setLevel(logging.ERROR)
    try:
        yield
    finally:
        package.setLevel(level)


def _watch(proc: subprocess.Popen, setup: TrialSetup, limit: float) -> tuple[float, str]:
    """Wait for the trial; returns its peak memory (MiB) and why it was stopped ('' if not)."""
    sample = setup.memory(proc.pid)
    deadline = time.monotonic() + limit
    peak, next_sample = 0.0, 0.0
    while proc.poll() is None:
        now = time.monotonic()
        if now >= next_sample:
            peak = max(peak, sample())
            next_sample = now + MEMORY_EVERY_S
            if peak > setup.memory_cap_mb:
                return peak, "out of memory: {peak:,.0f} MiB held > cap {cap:,.0f} MiB"
        if now >= deadline and limit >= setup.settings.timeout_s:
            return peak, "hang: no result within {limit:.0f} s (gmi.plan.timeout_s)"
        if now >= deadline:
            return peak, "stopped: the search's time budget ran out ({limit:.0f} s left)"
        time.sleep(POLL_S)
    return peak, ""


def stop_group(proc: subprocess.Popen, grace: float = STOP_GRACE_S) -> None:
    """Stop a trial and everything in its process group; returns once the trial is reaped."""
    for _ in range(2):  # a stop request, then the launcher's own teardown
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            continue
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever of the group is left
    proc.wait()


def _failure(code: int | None, report: dict, log_text: str) -> str:
    """Why a finished trial failed, in one line."""
    error = report.get("error") or _last_error_line(log_text) or f"exit code {code}"
    text = f"{error}\n{log_text[-20000:]}"
    if any(mark in text for mark in OOM_MARKS):
        return f"out of memory: {error}"
    if code == -signal.SIGKILL:
        return "out of memory: killed by SIGKILL (the kernel's out-of-memory killer)"
    return f"crash: {error}"


def _last_error_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for line in reversed(lines):
        if line.startswith(("error:", "RuntimeError", "Error", "Traceback")) or "Error:" in line:
            return line[:300]
    return lines[-1][:300] if lines else ""
