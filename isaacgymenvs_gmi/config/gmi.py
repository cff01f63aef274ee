"""Typed form of the ``gmi`` config group: how one run is split across GMIs."""

from __future__ import annotations

from dataclasses import dataclass

from .debug import DebugSettings
from .errors import ConfigError
from .plan import PlanSettings
from .schema import Choice, Int, Many, Real, Settings, Text, nested, setting

#: Allowed values, in the order used in error messages.
GMI_BACKENDS = ("auto", "mps", "mig", "direct", "cpu")
GMI_COMMS = ("auto", "mpr", "mrr", "har")
MAX_TIMEOUT_S = 2**31 // 1000  # 2,147,483 s: milliseconds must fit a 32-bit integer
_TIMEOUT_WHY = "seconds; collectives take their timeout in milliseconds as a 32-bit integer"
_CACHE = "'auto' (the user's cache folder), 'off', or a folder"


@dataclass(frozen=True)
class GmiConfig(Settings):
    """Validated ``gmi.*`` settings.

    Attributes:
        per_gpu: GMIs (worker processes) per GPU, >= 1.
        num_gpus: GPUs to use; ``None``: every visible one (without a GPU: one CPU device; G
            splits the CPU cores into G devices).
        backend: how a GPU is shared: MPS clients, MIG instances, plain sharing ("direct"),
            CPU core sets, or "auto" (the runtime chooses).
        mode: the mode's name, checked by the mode registry (``isaacgymenvs_gmi.runners``),
            which also lets a switch such as ``pbt.enabled=True`` choose it.
        comm: gradient reduction across GMIs, or "auto" to choose from the layout.
        intra_device: how the GMIs of one device exchange gradients: host shared memory
            ("shm"), a device buffer shared through CUDA IPC ("ipc"), gloo over loopback
            ("gloo"), or "auto" (on a GPU the faster of shm and ipc, measured at start).
            Across devices: NCCL between GPUs, gloo on CPU devices.
        sm_percent: MPS active-thread percentage per GMI, each in (0, 100] (one per GMI,
            checked by the runtime); ``None``: the runtime's split.
        compile_cache: the persistent XLA compile cache: ``auto`` (the user's cache folder),
            ``off``, or a folder (:mod:`isaacgymenvs_gmi.sim.compile_cache`).
        timeout_s: seconds a collective may wait for a missing GMI before the run stops and
            names it (start-up gets 10x this).
        trainers: in async mode, how many of the GMIs train (the first ones); the rest act.
        channels: in async and serve mode, experience split by kind into channels ("multi")
            or packed step by step into one ("uni", the paper's baseline).
        cores: how a CPU device's cores go to its GMIs: ``pinned`` (disjoint core sets),
            ``shared`` (all cores, thread pools sized to each GMI's share) or ``auto`` (see
            :mod:`isaacgymenvs_gmi.placement.cpu_sets`).
        start: ``auto`` forks the GMIs where that is safe, else spawns them
            (:mod:`isaacgymenvs_gmi.gmi.start_method`); ``spawn`` always spawns them.
        plan: ``gmi.plan.*``, how ``gmi.per_gpu=auto`` is searched (the planner replaces
            ``auto`` before a run is planned).
        debug: ``gmi.debug.*``, switches for diagnosing races (off by default).
    """

    PREFIX = "gmi"
    OTHERS = ("async",)  # gmi.async.*: the async mode's settings (config/async_mode.py)
    per_gpu: int = setting(1, Int(1, auto=True))
    num_gpus: int | None = setting(None, Int(1, optional=True))
    backend: str = setting("auto", Choice(GMI_BACKENDS))
    mode: str = setting("sync", Text("the name of a mode (e.g. sync)", lower=True))
    comm: str = setting("auto", Choice(GMI_COMMS))
    intra_device: str = setting("auto", Choice(("auto", "shm", "ipc", "gloo")))
    sm_percent: tuple[float, ...] | None = setting(
        None, Many(Real(0.0, 100.0, open_low=True), "numbers in (0, 100]", optional=True)
    )
    timeout_s: int = setting(30, Int(1, MAX_TIMEOUT_S, why=_TIMEOUT_WHY))
    compile_cache: str = setting("auto", Text(_CACHE))
    trainers: int = setting(1, Int(1))
    channels: str = setting("multi", Choice(("multi", "uni")))
    cores: str = setting("auto", Choice(("auto", "pinned", "shared")))
    start: str = setting("auto", Choice(("auto", "spawn")))
    plan: PlanSettings = nested(PlanSettings)
    debug: DebugSettings = nested(DebugSettings)

    def cross_check(self, prefix: str) -> None:
        if self.per_gpu is None:
            raise ConfigError(
                f"{prefix}.per_gpu",
                "auto",
                "is chosen by the planner before a run is planned: train.py does it; from "
                "Python call isaacgymenvs_gmi.planner.resolve_auto(cfg) first",
            )
