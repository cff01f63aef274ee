"""The jobs of a sweep's batch: each composed as Hydra composes it, checked as ``train.py``
would check it (before any job starts), with its folder and the command line that runs it."""

from __future__ import annotations

import contextlib
import copy
import logging
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.plan import is_auto

# keys every job gets from its slot (a job runs on one device: its slot's)
SLOT_KEYS = ("gmi.num_gpus", "train_dir")


class JobRefused(ValueError):
    """A job of the sweep cannot run; nothing has started. The message names the job and key."""


@dataclass
class JobSpec:
    """One job: its Hydra overrides and composed config, its folder, and the GMIs it runs."""

    idx: int
    overrides: tuple[str, ...]
    config: DictConfig  # the job's composed config, Hydra's node included
    folder: Path
    gmis: int  # slots it takes on one device (its own gmi.per_gpu)
    train_dir: Path  # where its run folder goes
    swept: tuple[str, ...] = ()  # its overrides that the sweep chose (not typed as they are)

    @property
    def label(self) -> str:
        return f"job {self.idx}" + (f" ({' '.join(self.swept)})" if self.swept else "")

    @property
    def result_file(self) -> Path:
        return self.folder / "result.json"

    @property
    def log_file(self) -> Path:
        return self.folder / "job.log"

    def command(self, source_args: list[str], cores: tuple[int, ...]) -> list[str]:
        """The job's process: ``train.py`` with the sweep's config sources, the job's own
        overrides and its slot's (one device, its own run folder)."""
        own = [o for o in self.overrides if o.lstrip("+~").split("=", 1)[0] not in SLOT_KEYS]
        result = str(self.result_file)
        cmd = [sys.executable, "-m", "isaacgymenvs_gmi.sweep_job", "--result", result]
        cmd += ["--cores", ",".join(map(str, cores))] if cores else []
        return [*cmd, "--", *source_args, *own, "gmi.num_gpus=1", f"train_dir={self.train_dir}"]


def prepare_jobs(
    loader: Any, config: DictConfig, job_overrides: list[list[str]], first_idx: int
) -> list[JobSpec]:
    """Compose and check every job of a batch (``loader``: Hydra's config loader); raises
    :class:`JobRefused` for the first one that cannot run."""
    typed = set(OmegaConf.select(config, "hydra.overrides.task", default=None) or [])
    jobs = []
    for offset, overrides in enumerate(job_overrides):
        idx = first_idx + offset
        swept = tuple(o for o in overrides if o not in typed)
        label = f"job {idx} ({' '.join(swept)})" if swept else f"job {idx}"
        try:
            composed = loader.load_sweep_config(config, list(overrides))
        except Exception as err:  # Hydra's composition errors name the override
            raise JobRefused(f"{label}: {_first_line(err)}") from None
        with open_dict(composed):
            composed.hydra.job.id = composed.hydra.job.num = idx
        folder = Path(str(composed.hydra.sweep.dir)) / str(composed.hydra.sweep.subdir)
        try:
            with _said_once(offset):
                gmis = check_job(composed)
        except ConfigError as err:
            raise JobRefused(f"{label}: {err}") from None
        train_dir = Path(str(composed.get("train_dir") or "runs"))  # jobs never share one:
        if train_dir.is_absolute():  # concurrent runs could get the same timestamped name
            train_dir = train_dir / str(composed.hydra.sweep.subdir)
        else:
            train_dir = folder.resolve() / train_dir
        jobs.append(JobSpec(idx, tuple(overrides), composed, folder, gmis, train_dir, swept))
    return jobs


def check_fits(jobs: list[JobSpec], per_gpu: int) -> None:
    """Raise :class:`JobRefused` for a job that runs more GMIs than a device has slots."""
    for job in jobs:
        if job.gmis > per_gpu:
            raise JobRefused(
                f"{job.label}: gmi.per_gpu={job.gmis} takes {job.gmis} slots of a device, "
                f"which has hydra.launcher.per_gpu={per_gpu}"
            )


def check_job(composed: DictConfig) -> int:
    """Run ``train.py``'s checks on a job's config (raises ConfigError naming the key); returns
    how many GMIs (device slots) it runs. ``auto`` values are checked with 1 GMI and the task's
    own env count: the job's planner chooses them when it runs."""
    from isaacgymenvs_gmi.launch import plan_run

    cfg = copy.deepcopy(composed)
    with open_dict(cfg):
        cfg.pop("hydra", None)
        per_gpu = OmegaConf.select(cfg, "gmi.per_gpu", default=1)
        if is_auto(per_gpu):
            cfg.gmi.per_gpu = 1
        if is_auto(cfg.get("num_envs")):
            cfg.num_envs = ""
        if OmegaConf.select(cfg, "gmi.num_gpus") is not None:
            cfg.gmi.num_gpus = 1  # a job runs on its slot's device
    plan = plan_run(cfg)
    return 1 if is_auto(per_gpu) else plan.layout.world_size


@contextlib.contextmanager
def _said_once(offset: int) -> Iterator[None]:
    """The checks' notes (a device fallback, settings ignored) for the first job only: the
    others would repeat them (every job says them again in its own log)."""
    if offset == 0:
        yield
        return
    logging.disable(logging.WARNING)
    try:
        yield
    finally:
        logging.disable(logging.NOTSET)


def _first_line(err: BaseException) -> str:
    text = str(err).strip() or type(err).__name__
    return " ".join(text.split("\n")[:2])
