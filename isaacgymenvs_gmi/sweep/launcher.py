"""A sweep's batches launched packed (Hydra's ``Launcher`` for ``hydra/launcher=gmi``).

Each batch: every job checked first (a refusal names the job and key: exit 2, nothing started);
the device slots laid out (one MPS daemon serves every job on a GPU); the jobs run, losers pruned
(one pruner for the whole sweep); a ``JobReturn`` per job carries its reward or its error. The
summary of the sweep's jobs so far is said and written after each batch. A stop signal ends the
sweep with its exit code once every running job has stopped.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.errors import CompactHydraException
from omegaconf import DictConfig, OmegaConf, open_dict

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.sources import active_source_args
from isaacgymenvs_gmi.gmi.mps import client_environment
from isaacgymenvs_gmi.gmi.stop import exit_code
from isaacgymenvs_gmi.placement.cpu_sets import usable_cores

from .jobs import JobRefused, JobSpec, check_fits, prepare_jobs
from .pruning import SweepPruner
from .report import SweepConsole, summary_lines, summary_rows, write_summary
from .runner import JobState, SweepRunner
from .settings import LauncherSettings
from .slots import Lease, SlotPool, check_capacity


class JobFailed(CompactHydraException):
    """A job of the sweep failed (crashed, killed); the others ran on. Hydra says it in one
    line when a sweeper reads the job's return value."""


class PackedSweep:
    """The launcher's state across a sweep's batches (Optuna launches several)."""

    def __init__(self, hydra_context: Any, config: DictConfig, settings: dict[str, Any]):
        self.context, self.config = hydra_context, config
        try:
            self.settings = LauncherSettings.from_node(settings)
        except ConfigError as err:
            _refuse(str(err))
        self.states: list[JobState] = []
        self.pruner: SweepPruner | None = None

    def launch(self, job_overrides: Sequence[Sequence[str]], first_idx: int) -> list[Any]:
        overrides = [list(o) for o in job_overrides]
        try:
            jobs = prepare_jobs(self.context.config_loader, self.config, overrides, first_idx)
            gpus, devices, per_gpu = self._devices(jobs)
        except (ConfigError, JobRefused) as err:
            _refuse(str(err))
        gpu = bool(gpus)
        if self.settings.prune != "none" and self.pruner is None:
            self.pruner = SweepPruner(self.settings, _epoch_limit(jobs[0]))
        pool = SlotPool(devices, per_gpu, usable_cores())
        console = SweepConsole(gpu, _live(self.settings.live))
        kind = ("GPU(s)" + (", MPS" if per_gpu > 1 else "")) if gpu else "CPU device(s)"
        console.line(
            f"{len(jobs)} jobs, {per_gpu} at a time on each of {pool.devices} {kind}; "
            f"folder {self.config.hydra.sweep.dir}"
        )
        with _mps_for(gpu and per_gpu > 1):
            runner = SweepRunner(
                jobs,
                pool,
                active_source_args(),
                lambda lease: self._environment(lease, gpus, mps=per_gpu > 1),
                console.started,
                console.ended,
                console.tick,
                pruner=self.pruner,
                value=self._value,
            )
            states = runner.run()
        console.close()
        self.states += states
        rows = summary_rows(self.states, self.settings.objective)
        written = write_summary(Path(str(self.config.hydra.sweep.dir)), rows)
        expected = OmegaConf.select(self.config, "hydra.sweeper.n_trials")  # Optuna's total
        last = runner.stop_signal is not None or not expected or len(self.states) >= expected
        if last:  # the closing summary; a batch of a longer sweep only updates the files
            for line in summary_lines(rows, self.settings.objective):
                console.line(line)
        console.line("summary written to " + ", ".join(str(p) for p in written))
        if runner.stop_signal is not None:
            sys.stdout.flush()
            raise SystemExit(exit_code(runner.stop_signal))
        return [self._job_return(s) for s in states]

    # --- devices ------------------------------------------------------------------------------
    def _devices(self, jobs: list[JobSpec]) -> tuple[list[int], int, int]:
        """(the GPUs' CUDA indices, none on a CPU machine; devices; jobs per device), checked."""
        from isaacgymenvs_gmi.config.sim import detect_platform
        from isaacgymenvs_gmi.placement.inventory import detect_inventory
        from isaacgymenvs_gmi.placement.machine_limits import available_memory

        cuda = detect_platform()[0]
        gpus = list(range(len(detect_inventory().gpus))) if cuda else []
        wanted = OmegaConf.select(self.config, "gmi.num_gpus")
        if gpus and wanted is not None:
            gpus = gpus[: int(wanted)]
        per_gpu = self.settings.per_gpu or _planned_per_gpu(jobs[0])
        devices = len(gpus) if gpus else (1 if wanted is None else int(wanted))
        check_capacity(per_gpu, devices, len(usable_cores()), available_memory(), bool(gpus))
        check_fits(jobs, per_gpu)
        return gpus, devices, per_gpu

    def _environment(self, lease: Lease, gpus: list[int], mps: bool) -> dict[str, str]:
        if not gpus:
            return {}
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        ids = visible.split(",") if visible else [str(g) for g in gpus]
        env = {"CUDA_VISIBLE_DEVICES": ids[lease.device].strip()}
        if mps:
            env.update(client_environment(self.settings.sm_percent))
        return env

    # --- Hydra --------------------------------------------------------------------------------
    def _job_return(self, state: JobState) -> Any:
        from hydra.core.utils import JobReturn, JobStatus

        spec = state.spec
        cfg = copy.deepcopy(spec.config)
        with open_dict(cfg):
            hydra_node = cfg.pop("hydra")
        ret = JobReturn(
            overrides=list(spec.overrides),
            cfg=cfg,
            hydra_cfg=OmegaConf.create({"hydra": hydra_node}),
            working_dir=str(spec.folder),
            task_name=str(hydra_node.job.name),
        )
        if state.error is not None:
            ret.status = JobStatus.FAILED
            ret.return_value = JobFailed(f"{spec.label}: {state.error}")
            return ret
        value = self._value(state)
        ret.status = JobStatus.COMPLETED
        ret.return_value = float("nan") if value is None else value
        return ret

    def _value(self, state: JobState) -> float | None:
        """A job's objective (a pruned job's: the best, or last, reward it reached before it
        was stopped); None where it has none."""
        value = (state.result or {}).get(f"{self.settings.objective}_reward")
        return value if isinstance(value, float | int) and math.isfinite(value) else None


def _epoch_limit(job: JobSpec) -> int | None:
    """The epochs a job runs at most (``max_iterations``, else the train config's
    ``max_epochs``), or None for no limit."""
    for key in ("max_iterations", "train.params.config.max_epochs"):
        value = OmegaConf.select(job.config, key, default=None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def _refuse(message: str) -> None:
    """Nothing has started: say why and leave as ``train.py`` does for bad input."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def _live(setting: str) -> bool:
    return setting == "on" or (setting == "auto" and sys.stderr.isatty())


def _planned_per_gpu(job: JobSpec) -> int:
    """``per_gpu=auto``: the planner's measured GMIs per device for the first job (its search
    runs sync PPO on that many GMIs, which costs what independent jobs do not pay: a
    conservative answer), cached like any plan."""
    from isaacgymenvs_gmi.planner import resolve_auto

    cfg = copy.deepcopy(job.config)
    with open_dict(cfg):
        cfg.pop("hydra")
        cfg.gmi.per_gpu = "auto"
    chosen = resolve_auto(cfg)
    return int(chosen.gmi.per_gpu)


def _mps_for(needed: bool) -> contextlib.AbstractContextManager:
    """One MPS daemon for every job on the GPUs (a running one is used; ours is stopped)."""
    if not needed:
        return contextlib.nullcontext()
    from isaacgymenvs_gmi.gmi.mps import mps_daemon

    return mps_daemon()
