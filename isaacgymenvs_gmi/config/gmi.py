"""Typed form of the ``gmi`` config group: how one run is split across GMIs."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal, cast, get_args

from ._values import (
    as_mapping,
    check_choice,
    check_int,
    check_known_keys,
    check_percent,
    to_plain,
)
from .async_mode import AsyncSettings
from .debug import DebugSettings
from .errors import ConfigError
from .plan import PlanSettings, is_auto

GmiBackend = Literal["auto", "mps", "mig", "direct", "cpu"]
GmiComm = Literal["auto", "mpr", "mrr", "har"]
GmiIntraDevice = Literal["auto", "shm", "ipc", "gloo"]
GmiChannels = Literal["multi", "uni"]
GmiCores = Literal["auto", "pinned", "shared"]
GmiStart = Literal["auto", "spawn"]

#: Allowed values, in the order used in error messages.
GMI_BACKENDS: tuple[GmiBackend, ...] = get_args(GmiBackend)
MAX_TIMEOUT_S = 2**31 // 1000  # 2,147,483 s: milliseconds must fit a 32-bit integer
GMI_COMMS: tuple[GmiComm, ...] = get_args(GmiComm)
GMI_INTRA_DEVICE: tuple[GmiIntraDevice, ...] = get_args(GmiIntraDevice)
GMI_CHANNELS: tuple[GmiChannels, ...] = get_args(GmiChannels)
GMI_CORES: tuple[GmiCores, ...] = get_args(GmiCores)
GMI_STARTS: tuple[GmiStart, ...] = get_args(GmiStart)


@dataclass(frozen=True)
class GmiConfig:
    """Validated ``gmi.*`` settings.

    Attributes:
        per_gpu: GMIs (worker processes) per GPU, >= 1.
        num_gpus: GPUs to use; ``None`` means every visible GPU (on a machine without one:
            a single CPU device; an integer G there splits the CPU cores into G devices).
        backend: how a GPU is shared: MPS clients, MIG instances, plain sharing ("direct"),
            CPU core sets, or "auto" to let the runtime choose.
        mode: the mode's name, checked by the mode registry (``isaacgymenvs_gmi.runners``),
            which also lets a switch such as ``pbt.enabled=True`` choose it.
        comm: gradient reduction across GMIs, or "auto" to choose from the layout.
        intra_device: how the GMIs of one device exchange gradients: a host shared-memory
            segment ("shm"; host-staged on a GPU), a device buffer shared through CUDA IPC
            ("ipc"; GMIs sharing a GPU under MPS or time-sharing), gloo over loopback ("gloo"),
            or "auto" (on a GPU the faster of shm and ipc, measured at start; on CPU devices
            shared memory where the platform supports it). Across devices: NCCL between GPUs,
            gloo on CPU devices.
        sm_percent: MPS active-thread percentage per GMI, each in (0, 100]; ``None`` leaves
            the split to the runtime. Its length is checked by the runtime, which knows the
            number of GMIs.
        compile_cache: the persistent XLA compile cache: ``auto`` (the user's cache folder),
            ``off``, or a folder (:mod:`isaacgymenvs_gmi.sim.compile_cache`).
        timeout_s: seconds a collective between GMIs may wait for a missing GMI before the run
            stops and names it (start-up, which builds envs and compiles, gets 10x this).
        trainers: in async mode, how many of the GMIs train (the first ones); the rest act.
            Checked against the number of GMIs by the runtime, which knows it.
        channels: in async and serve mode, experience travels split by kind into channels
            ("multi", the paper's multi-channel design) or packed step by step into one
            channel ("uni", the paper's uni-channel baseline).
        cores: how a CPU device's cores go to its GMIs: ``pinned`` (disjoint core sets;
            with fewer cores than GMIs some GMIs share one core), ``shared`` (every GMI may
            run on all of the device's cores, each with thread pools sized to its share, and
            the OS balances them), or ``auto`` (see :mod:`isaacgymenvs_gmi.placement.cpu_sets`).
        start: how the launcher starts its GMIs: ``auto`` forks them where that is safe (they
            start with what it has imported; :mod:`isaacgymenvs_gmi.gmi.start_method`) and
            spawns them elsewhere; ``spawn`` always spawns them.
        async_: ``gmi.async.*``, the A3C runner's settings.
        plan: ``gmi.plan.*``, how ``gmi.per_gpu=auto`` is searched. A run is planned with a
            number: the planner (:mod:`isaacgymenvs_gmi.planner`) replaces ``auto`` first.
        debug: ``gmi.debug.*``, switches for diagnosing races (off by default).
    """

    per_gpu: int = 1
    num_gpus: int | None = None
    backend: GmiBackend = "auto"
    mode: str = "sync"
    comm: GmiComm = "auto"
    intra_device: GmiIntraDevice = "auto"
    sm_percent: tuple[float, ...] | None = None
    timeout_s: int = 30
    compile_cache: str = "auto"
    trainers: int = 1
    channels: GmiChannels = "multi"
    cores: GmiCores = "auto"
    start: GmiStart = "auto"
    async_: AsyncSettings = AsyncSettings()
    plan: PlanSettings = PlanSettings()
    debug: DebugSettings = DebugSettings()

    @classmethod
    def from_cfg(cls, node: Any, *, prefix: str = "gmi") -> GmiConfig:
        """Build from the ``gmi`` node (a DictConfig or a mapping); missing keys take defaults.

        Raises:
            ConfigError: naming ``<prefix>.<key>`` for an unknown key or a bad value.
        """
        given = as_mapping(prefix, node)
        known = tuple(f.name.rstrip("_") for f in fields(cls))
        check_known_keys(prefix, given, known)
        defaults = cls()

        raw_per_gpu = given.get("per_gpu", defaults.per_gpu)
        if is_auto(raw_per_gpu):
            raise ConfigError(
                f"{prefix}.per_gpu",
                "auto",
                "is chosen by the planner before a run is planned: train.py does it; from "
                "Python call isaacgymenvs_gmi.planner.resolve_auto(cfg) first",
            )
        per_gpu = check_int(f"{prefix}.per_gpu", raw_per_gpu, minimum=1)
        raw_gpus = given.get("num_gpus", defaults.num_gpus)
        num_gpus = (
            None if raw_gpus is None else check_int(f"{prefix}.num_gpus", raw_gpus, minimum=1)
        )
        backend = check_choice(
            f"{prefix}.backend", given.get("backend", defaults.backend), GMI_BACKENDS
        )
        mode = _mode_name(f"{prefix}.mode", given.get("mode", defaults.mode))
        comm = check_choice(f"{prefix}.comm", given.get("comm", defaults.comm), GMI_COMMS)
        intra_device = check_choice(
            f"{prefix}.intra_device",
            given.get("intra_device", defaults.intra_device),
            GMI_INTRA_DEVICE,
        )
        sm_percent = _sm_percent(f"{prefix}.sm_percent", given.get("sm_percent"))
        timeout_s = check_int(
            f"{prefix}.timeout_s", given.get("timeout_s", defaults.timeout_s), minimum=1
        )
        if timeout_s > MAX_TIMEOUT_S:
            raise ConfigError(
                f"{prefix}.timeout_s",
                timeout_s,
                f"must be an integer in [1, {MAX_TIMEOUT_S}] (seconds; collectives take their "
                "timeout in milliseconds as a 32-bit integer)",
            )
        compile_cache = to_plain(given.get("compile_cache", defaults.compile_cache))
        if not isinstance(compile_cache, str) or not compile_cache.strip():
            raise ConfigError(
                f"{prefix}.compile_cache",
                compile_cache,
                "must be 'auto' (the user's cache folder), 'off', or a folder",
            )
        trainers = check_int(
            f"{prefix}.trainers", given.get("trainers", defaults.trainers), minimum=1
        )
        channels = check_choice(
            f"{prefix}.channels", given.get("channels", defaults.channels), GMI_CHANNELS
        )
        cores = check_choice(f"{prefix}.cores", given.get("cores", defaults.cores), GMI_CORES)
        start = check_choice(f"{prefix}.start", given.get("start", defaults.start), GMI_STARTS)
        async_ = AsyncSettings.from_cfg(given.get("async"), prefix=f"{prefix}.async")
        plan = PlanSettings.from_cfg(given.get("plan"), prefix=f"{prefix}.plan")
        debug = DebugSettings.from_cfg(given.get("debug"), prefix=f"{prefix}.debug")

        return cls(
            per_gpu=per_gpu,
            num_gpus=num_gpus,
            backend=cast(GmiBackend, backend),
            mode=mode,
            comm=cast(GmiComm, comm),
            intra_device=cast(GmiIntraDevice, intra_device),
            sm_percent=sm_percent,
            timeout_s=timeout_s,
            compile_cache=compile_cache,
            trainers=trainers,
            channels=cast(GmiChannels, channels),
            cores=cast(GmiCores, cores),
            start=cast(GmiStart, start),
            async_=async_,
            plan=plan,
            debug=debug,
        )


def _sm_percent(key: str, value: Any) -> tuple[float, ...] | None:
    value = to_plain(value)
    if value is None:
        return None
    if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
        raise ConfigError(key, value, "must be null or a list of numbers in (0, 100]")
    if not value:
        raise ConfigError(key, value, "must be null or a non-empty list of numbers in (0, 100]")
    return tuple(check_percent(f"{key}[{i}]", v) for i, v in enumerate(value))


def _mode_name(key: str, value: Any) -> str:
    """A mode's name, lower-cased; which names there are is the mode registry's to say
    (:func:`isaacgymenvs_gmi.runners.mode_named`)."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(key, value, "must be the name of a mode (e.g. sync)")
    return value.strip().lower()
