"""Typed form of ``hydra.launcher.*`` for ``hydra/launcher=gmi``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from isaacgymenvs_gmi.config._values import as_mapping
from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.config.schema import Choice, Int, Real, Settings, parse, setting

from .pruning import PRUNERS

PREFIX = "hydra.launcher"
OBJECTIVES = ("best", "final")
_HYDRA_KEYS = ("_target_",)  # Hydra's own key in every launcher config


@dataclass(frozen=True)
class _OnOff(Choice):
    """``auto``, ``on`` or ``off``; YAML reads on/off as booleans, taken as such."""

    allowed: tuple[str, ...] = ("auto", "on", "off")

    def convert(self, value: Any) -> Any:
        if isinstance(value, bool):
            return "on" if value else "off"
        return super().convert(value)


@dataclass(frozen=True)
class LauncherSettings(Settings):
    """Validated ``hydra.launcher.*``.

    Attributes:
        per_gpu: jobs each device runs at once (a job with ``gmi.per_gpu=k`` takes k), or
            ``None`` for ``auto``: the planner measures how many GMIs a device holds best.
        objective: what a job returns to the sweeper: ``best`` (the highest mean episode reward
            of any epoch) or ``final`` (the last one).
        sm_percent: on a GPU, each job's MPS active-thread percentage; ``None``: uncapped.
        live: the live table of running jobs: ``auto`` (on a terminal), ``on`` or ``off``.
        prune: which jobs stop early (:mod:`~.pruning`): ``none``, ``median``, ``halving``
            (asynchronous successive halving) or ``hyperband``, Optuna's pruners.
        warmup_epochs: epochs every job runs before a pruner may stop it.
        startup_jobs: ``median``: jobs that must have finished before it stops any.
        min_epochs: ``halving``/``hyperband``: the first rung (``None``: ``warmup_epochs``,
            at least 1).
        reduction_factor: ``halving``/``hyperband``: 1 / the share of jobs going on at a rung.
    """

    per_gpu: int | None = setting(2, Int(1, why="jobs per device", auto=True))
    objective: str = setting("best", Choice(OBJECTIVES))
    sm_percent: float | None = setting(None, Real(0.0, 100.0, open_low=True, optional=True))
    live: str = setting("auto", _OnOff())
    prune: str = setting("none", Choice(PRUNERS))
    warmup_epochs: int = setting(5, Int(0))
    startup_jobs: int = setting(3, Int(0))
    min_epochs: int | None = setting(None, Int(1, optional=True))
    reduction_factor: int = setting(3, Int(2))

    def cross_check(self, prefix: str) -> None:
        if self.prune == "none":
            return
        try:
            import optuna  # noqa: F401
        except ImportError:
            raise ConfigError(
                f"{prefix}.prune",
                self.prune,
                "needs Optuna, whose pruners decide (pip install 'isaacgymenvs_gmi[optuna]')",
            ) from None

    @classmethod
    def from_node(cls, node: Any, *, prefix: str | None = None) -> LauncherSettings:
        """From the launcher's node (``hydra.launcher``), Hydra's own keys left out."""
        given = {k: v for k, v in as_mapping(PREFIX, node).items() if k not in _HYDRA_KEYS}
        return parse(cls, given, PREFIX)
