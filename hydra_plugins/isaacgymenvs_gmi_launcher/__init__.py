"""``hydra/launcher=gmi``: a Hydra launcher that packs a sweep's jobs onto GMIs.

Hydra finds launchers only under the ``hydra_plugins`` namespace, so this module holds the
class Hydra instantiates and its config; the work is done by :mod:`isaacgymenvs_gmi.sweep`,
imported when a sweep launches (a single run pays nothing for it).
"""

# no ``from __future__ import annotations``: Hydra loads plugin modules without registering them
# in sys.modules, where dataclasses looks string annotations up
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig


@dataclass
class GmiLauncherConf:
    """``hydra.launcher.*`` (checked by ``isaacgymenvs_gmi.sweep.settings``)."""

    _target_: str = "hydra_plugins.isaacgymenvs_gmi_launcher.GmiLauncher"
    per_gpu: Any = 2  # jobs each device runs at once, or auto (measured by the planner)
    objective: str = "best"  # what a job returns: best | final mean episode reward
    sm_percent: Any = None  # on a GPU: each job's MPS thread percentage (null: uncapped)
    live: Any = "auto"  # the live table of running jobs: auto (on a terminal) | on | off
    prune: str = "none"  # which jobs stop early: none | median | halving | hyperband (Optuna's)
    warmup_epochs: Any = 5  # epochs every job runs before a pruner may stop it
    startup_jobs: Any = 3  # median: jobs finished before it stops any
    min_epochs: Any = None  # halving/hyperband: the first rung (null: warmup_epochs, >= 1)
    reduction_factor: Any = 3  # halving/hyperband: 1 / the share of jobs going on at a rung


ConfigStore.instance().store(
    group="hydra/launcher", name="gmi", node=GmiLauncherConf, provider="isaacgymenvs_gmi"
)


class GmiLauncher(Launcher):
    """Hydra's ``Launcher``: every job of a batch in a process of its own on a slot of a device,
    ``hydra.launcher.per_gpu`` at once per device (:class:`isaacgymenvs_gmi.sweep.launcher.
    PackedSweep`)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__()
        self.settings = settings
        self._sweep: Any = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        from isaacgymenvs_gmi.sweep.launcher import PackedSweep

        self._sweep = PackedSweep(hydra_context, config, self.settings)

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        return self._sweep.launch(job_overrides, initial_job_idx)
