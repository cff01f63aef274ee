"""``hydra/launcher=gmi``: a Hydra launcher that packs a sweep's jobs onto GMIs; and the
structured configs of ``gmi.*``, ``pbt.*`` and ``hydra.launcher.*``.

Hydra finds plugins only under the ``hydra_plugins`` namespace and imports them before it
composes, so this module registers the structured configs, made from the settings classes
(:mod:`isaacgymenvs_gmi.config.structured`), and holds the class Hydra instantiates; the work is
done by :mod:`isaacgymenvs_gmi.sweep.launcher`, imported when a sweep launches (a single run
imports only the settings classes, no torch).
"""

from collections.abc import Sequence
from typing import Any

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from isaacgymenvs_gmi.config.async_mode import AsyncSettings
from isaacgymenvs_gmi.config.gmi import GmiConfig
from isaacgymenvs_gmi.config.pbt import PbtSettings
from isaacgymenvs_gmi.config.structured import PROVIDER, schema_node
from isaacgymenvs_gmi.sweep.settings import LauncherSettings

TARGET = "hydra_plugins.isaacgymenvs_gmi_launcher.GmiLauncher"


def store_schemas() -> None:
    """Register ``gmi/schema`` (``gmi.*`` and ``gmi.async.*``), ``pbt/schema`` and
    ``hydra/launcher/gmi`` in Hydra's ConfigStore; a second call stores the same nodes again."""
    store = ConfigStore.instance()
    gmi = schema_node(GmiConfig, **{"async": AsyncSettings})
    store.store(group="gmi", name="schema", node=gmi, provider=PROVIDER)
    store.store(group="pbt", name="schema", node=schema_node(PbtSettings), provider=PROVIDER)
    launcher = schema_node(LauncherSettings, head={"_target_": TARGET})
    store.store(group="hydra/launcher", name="gmi", node=launcher, provider=PROVIDER)


store_schemas()


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
