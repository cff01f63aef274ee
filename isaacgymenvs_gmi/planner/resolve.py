"""``gmi.per_gpu=auto`` / ``num_envs=auto``: check the request, reuse a cached search or run
one, and hand back the config of the chosen candidate.

Everything that can be checked is checked before the first trial starts, the user's config
included (the first shape is planned like a run: a bad learning rate fails here, not in every
trial).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from omegaconf import DictConfig, OmegaConf, open_dict

from isaacgymenvs_gmi.config import ConfigError, GmiConfig, RunSettings
from isaacgymenvs_gmi.config._values import select
from isaacgymenvs_gmi.config.plan import PlanSettings, is_auto
from isaacgymenvs_gmi.config.schema import Int
from isaacgymenvs_gmi.launch import plan_run
from isaacgymenvs_gmi.placement.cpu_sets import split_cores, usable_cores
from isaacgymenvs_gmi.placement.inventory import Inventory, detect_inventory
from isaacgymenvs_gmi.placement.machine_limits import MEMORY_SHARE, available_memory
from isaacgymenvs_gmi.placement.run_plan import RunPlan
from isaacgymenvs_gmi.placement.torchrun import torchrun_world
from isaacgymenvs_gmi.runners import MODES, chosen_mode

from .cache import PlanCache, default_cache_dir, digest, fingerprint, train_config_hash
from .candidates import MB_KEY, Request, apply, env_grid, minibatches_of, shapes
from .memory import MIB, device_memory_mb, device_sampler, host_sampler
from .projection import Projection, mlp_parameters
from .report import progress_line, result_dict, table
from .search import Candidate, Profiler, search
from .trial import TrialSetup, run_trial


class NoRunnableCandidate(RuntimeError):
    """Every candidate of the search failed; the message holds the table."""


@dataclass(frozen=True)
class Choice:
    """The planner's answer: the candidate, the config that runs it, and the search behind it."""

    candidate: Candidate
    cfg: DictConfig
    request: Request
    result: dict[str, Any]  # report.result_dict of the search (possibly from the cache)
    cache_path: Path
    from_cache: bool

    def overrides(self) -> list[str]:
        """Command-line overrides that run the choice without searching."""
        c = self.candidate
        out = [f"gmi.per_gpu={c.per_gpu}", f"num_envs={c.num_envs}"]
        minibatch = self.request.minibatch_size(c.num_envs)
        if minibatch is not None:
            out.append(f"{MB_KEY}={minibatch}")
        if c.cores != "auto":
            out.append(f"gmi.cores={c.cores}")
        return out


def auto_requested(cfg: DictConfig) -> bool:
    return is_auto(select(cfg, "gmi.per_gpu")) or _envs_auto(cfg)


def _envs_auto(cfg: DictConfig) -> bool:
    return is_auto(select(cfg, "num_envs")) or is_auto(OmegaConf.select(cfg, "task.env.numEnvs"))


def resolve_auto(cfg: DictConfig, **kwargs: Any) -> DictConfig:
    """``cfg`` itself when nothing in it is ``auto``, else the config :func:`choose` picks."""
    return choose(cfg, **kwargs).cfg if auto_requested(cfg) else cfg


def check_request(cfg: DictConfig) -> tuple[PlanSettings, Request, RunPlan]:
    """Validate an ``auto`` request without starting anything (raises :class:`ConfigError`):
    the planner's settings, the request, and the user's config planned for the first shape."""
    per_auto, envs_auto = is_auto(select(cfg, "gmi.per_gpu")), _envs_auto(cfg)
    key = "gmi.per_gpu" if per_auto else "num_envs"
    if torchrun_world(os.environ):
        raise ConfigError(key, "auto", "cannot be searched under torchrun, where ranks are fixed")
    settings = PlanSettings.from_cfg(cfg)
    mode = chosen_mode(cfg, str(select(cfg, "gmi.mode", GmiConfig.mode)).strip().lower())
    if mode.not_searched:
        searched = " and ".join(m.name for m in MODES.values() if not m.not_searched)
        raise ConfigError(key, "auto", f"searches {searched} runs; {mode.not_searched}")
    run = RunSettings.from_cfg(cfg)
    if run.test:
        raise ConfigError(key, "auto", "test=True plays in one process: nothing to search")
    train_config = select(cfg, "train.params.config", {}) or {}
    horizon = run.horizon_length
    per_gpu = None if per_auto else Int(1).check("gmi.per_gpu", select(cfg, "gmi.per_gpu"))
    envs = _reference_envs(cfg)
    minibatches = minibatches_of(train_config, horizon, envs) if mode.trains else None
    cores = str(select(cfg, "gmi.cores", "auto")).lower()
    request = Request(per_gpu, None if envs_auto else envs, horizon, minibatches, cores)
    first = env_grid(settings)[0] if envs_auto else envs
    reference = apply(cfg, Candidate(per_gpu or 1, first), request)
    return settings, request, plan_run(reference)


def _reference_envs(cfg: DictConfig) -> int:
    """The envs of the config without ``auto``: the user's total per device, or under
    ``num_envs=auto`` the task's default (which sets the minibatches per epoch)."""
    probe = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(probe):
        if is_auto(probe.get("num_envs")):
            probe.num_envs = ""
    value = OmegaConf.select(probe, "task.env.numEnvs")
    if is_auto(value):
        raise ConfigError("task.env.numEnvs", "auto", "ask for the free search with num_envs=auto")
    return Int(1).check("task.env.numEnvs", value)


def choose(
    cfg: DictConfig,
    *,
    profiler: Profiler | None = None,
    environ: dict[str, str] | None = None,
    inventory: Inventory | None = None,
    stream: TextIO | None = None,
) -> Choice:
    """Search (or take from the cache) the configuration to run ``cfg`` with.

    Args:
        profiler: runs a trial; default: a real run in processes of its own.
        environ: extra environment for trial processes.
        inventory: this machine's devices (detected when not given).
        stream: where progress and the decision are printed (default: stderr).
    """
    stream = stream or sys.stderr
    settings, request, ref = check_request(cfg)
    gpu = ref.gmi_backend != "cpu"
    inventory = inventory or (detect_inventory() if gpu else Inventory())
    devices = ref.layout.devices_per_node
    cores = None if gpu else tuple(split_cores(usable_cores(), devices, 1)[0])
    cap = settings.memory_mb or MEMORY_SHARE * (
        device_memory_mb(inventory.gpus[0].index) if gpu else available_memory() / MIB
    )
    grid = shapes(request, settings, gpu=gpu, device_cores=len(cores or usable_cores()))
    root = Path(settings.cache_dir) if settings.cache_dir else default_cache_dir()
    identity = _identity(ref, request, settings)
    cache = PlanCache(root, ref.task_name, identity, fingerprint(inventory))
    result = None if settings.replan else cache.load()
    from_cache = result is not None
    if result is None:
        if profiler is None:
            sampler = (lambda _: device_sampler(inventory.gpus[0].index)) if gpu else host_sampler
            setup = TrialSetup(cfg, request, settings, cap, cores, sampler, environ)
            profiler = lambda cand, seconds: run_trial(setup, cand, seconds)  # noqa: E731
        result = _search(grid, profiler, ref, request, settings, cap, devices, gpu, stream)
        if result["best"] is not None:  # a search where nothing ran is not worth keeping
            cache.store(result)
    best = result["best"]
    if best is None:
        raise NoRunnableCandidate(
            f"the planner found no configuration that runs ({result['ended']}):\n"
            + table(result["rows"])
        )
    cand = Candidate(best["per_gpu"], best["num_envs"], best["cores"])
    choice = Choice(cand, apply(cfg, cand, request), request, result, cache.path, from_cache)
    print(_decision(choice, devices), file=stream, flush=True)
    return choice


def _search(grid, profiler, ref, request, settings, cap, devices, gpu, stream) -> dict:
    network = ref.train_params.get("network", {})
    mini_epochs = int(ref.train_params["config"].get("mini_epochs", 1))
    updates = mini_epochs * (request.minibatches or 1)
    model_bytes = 4 * mlp_parameters(ref.dims[0], ref.dims[2], network)
    projection = Projection(devices, gpu, request.horizon, updates, model_bytes)
    start = time.monotonic()

    def say(line: str) -> None:
        print(line, file=stream, flush=True)

    def on_row(row, done, total):
        say(progress_line(row, done, total, time.monotonic() - start, settings.budget_s))

    what = "gmi.per_gpu" if request.per_gpu is None else f"gmi.per_gpu={request.per_gpu}"
    what += ", num_envs" if request.free else f" with {request.total_envs} envs per device"
    say(f"[plan] searching {what}: {len(grid)} shape(s), at most {settings.budget_s:.0f} s")
    found = search(
        grid,
        profiler,
        projection,
        alpha=settings.alpha,
        budget_s=settings.budget_s,
        memory_cap_mb=cap,
        on_row=on_row,
    )
    return result_dict(found)


def _identity(ref: RunPlan, request: Request, settings: PlanSettings) -> dict[str, Any]:
    """What a search's result depends on besides the machine."""
    task_config = {k: v for k, v in ref.task_config.items() if k != "env"}
    task_env = {k: v for k, v in ref.task_config.get("env", {}).items() if k != "numEnvs"}
    return {
        "train": train_config_hash(ref.train_params),
        "task_config": digest({**task_config, "env": task_env}),
        "sim": [ref.sim.backend, ref.sim.mjx_impl, ref.gmi_backend],
        "devices": ref.layout.devices_per_node,
        "mode": ref.mode,
        "request": asdict(request),
        "search": {
            k: getattr(settings, k)
            for k in ("alpha", "epochs", "warmup_epochs", "max_per_gpu", "min_envs", "max_envs")
        },
    }


def _decision(choice: Choice, devices: int) -> str:
    c, r, req = choice.candidate, choice.result, choice.request
    runnable = len(
        {(x["per_gpu"], x["num_envs"], x["cores"]) for x in r["rows"] if x["env_steps_per_s"]}
    )
    why = "free num_env search (num_envs=auto)"
    if not req.free:
        why = f"the config's {req.total_envs} envs per device split over {c.per_gpu} GMI(s)"
    where = (
        f"from the cache {choice.cache_path}"
        if choice.from_cache
        else f"searched in {r['seconds']:.0f} s, {r['trials']} trial run(s); cached in "
        f"{choice.cache_path}"
    )
    return (
        f"[plan] chose {' '.join(choice.overrides())}: {r['projected']:,.0f} env steps/s "
        f"projected on {devices} device(s), best of {runnable} runnable candidate(s); {why}; "
        f"{where}"
    )
