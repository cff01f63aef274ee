"""Typed form of ``hydra.launcher.*`` for ``hydra/launcher=gmi``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, cast

from isaacgymenvs_gmi.config._values import (
    as_mapping,
    check_choice,
    check_int,
    check_known_keys,
    check_percent,
    to_plain,
)
from isaacgymenvs_gmi.config.errors import ConfigError
from isaacgymenvs_gmi.config.plan import is_auto

PREFIX = "hydra.launcher"
Objective = Literal["best", "final"]
OBJECTIVES: tuple[Objective, ...] = ("best", "final")
_HYDRA_KEYS = ("_target_",)  # Hydra's own key in every launcher config


@dataclass(frozen=True)
class LauncherSettings:
    """Validated ``hydra.launcher.*``.

    Attributes:
        per_gpu: jobs each device runs at once (a job with ``gmi.per_gpu=k`` takes k), or
            ``None`` for ``auto``: the planner measures how many GMIs a device holds best.
        objective: what a job returns to the sweeper (Optuna's objective): ``best``, the
            highest mean episode reward any epoch reported, or ``final``, the last one.
        sm_percent: on a GPU, each job's MPS active-thread percentage; ``None`` leaves every
            job uncapped (MPS shares the SMs as the jobs need them).
        live: the live table of running jobs: ``auto`` (on a terminal), ``on`` or ``off``.
    """

    per_gpu: int | None = 2
    objective: Objective = "best"
    sm_percent: float | None = None
    live: Literal["auto", "on", "off"] = "auto"

    @classmethod
    def from_cfg(cls, node: Any) -> LauncherSettings:
        given = {k: v for k, v in as_mapping(PREFIX, node).items() if k not in _HYDRA_KEYS}
        check_known_keys(PREFIX, given, ("per_gpu", "objective", "sm_percent", "live"))
        d = cls()
        raw = to_plain(given.get("per_gpu", d.per_gpu))
        per_gpu = None if is_auto(raw) else _per_gpu(raw)
        percent = to_plain(given.get("sm_percent"))
        live = to_plain(given.get("live", d.live))
        live = {True: "on", False: "off"}.get(live, live) if isinstance(live, bool) else live
        return cls(
            per_gpu=per_gpu,
            objective=cast(
                Objective,
                check_choice(
                    f"{PREFIX}.objective", given.get("objective", d.objective), OBJECTIVES
                ),
            ),
            sm_percent=None if percent is None else check_percent(f"{PREFIX}.sm_percent", percent),
            live=cast(Any, check_choice(f"{PREFIX}.live", live, ("auto", "on", "off"))),
        )


def _per_gpu(value: Any) -> int:
    try:
        return check_int(f"{PREFIX}.per_gpu", value, minimum=1)
    except ConfigError:
        raise ConfigError(
            f"{PREFIX}.per_gpu", value, "must be an integer >= 1 (jobs per device) or auto"
        ) from None
