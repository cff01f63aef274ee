"""A mode as a plug-in: what it checks before any process starts, and what every GMI then runs.
The launcher knows modes only through :class:`Mode`; a mode's telemetry lives in its own
package and is written by its body.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from isaacgymenvs_gmi.config import GmiConfig, TrainSettings
from isaacgymenvs_gmi.gmi.context import Body
from isaacgymenvs_gmi.placement.layout import GmiLayout
from isaacgymenvs_gmi.placement.run_plan import ModeTerms, RunPlan


@dataclass(frozen=True)
class ModeFacts:
    """What a mode's checks see: the validated settings and the layout the run will have.

    Attributes:
        layout: where the GMIs go (nodes x devices x GMIs per device).
        train_params: the resolved ``train.params`` node, as rl-games will read it.
        num_envs: envs per GMI as given (not yet known to be a count).
        backend: the GMI backend after ``auto`` (cpu, mps, mig, direct).
        settings: the mode's own typed settings (its ``Mode.settings``), or None.
        dims: the task's observation, state and action widths.
    """

    gmi: GmiConfig
    layout: GmiLayout
    train_params: dict
    num_envs: object
    train: TrainSettings
    backend: str
    cuda: bool
    settings: Any = None
    task_name: str = ""
    dims: tuple[int, int, int] = (0, 0, 0)


@dataclass(frozen=True)
class Claim:
    """A switch elsewhere in the config that selects a mode (``pbt.enabled=True``): refused
    with a ``gmi.mode`` other than the default or that mode.

    Attributes:
        applies: whether the composed config sets the switch (``ConfigError`` for a bad value).
        switch: the switch as a user writes it, for messages (``pbt.enabled=True``).
        undo: how to turn it off (``pbt=no_pbt``).
    """

    applies: Callable[[Any], bool]
    switch: str
    undo: str


@dataclass(frozen=True)
class Mode:
    """One ``gmi.mode``.

    Attributes:
        name: its ``gmi.mode`` value.
        summary: one line for error messages and the README.
        body: what every GMI runs (``GmiContext -> GMI 0's result``).
        check: refuses what the mode cannot run (``ConfigError``), else says which GMIs the
            run survives losing.
        trains: whether the mode trains with the train config's PPO batch (then checked).
        in_one_process: whether a plan of several GMIs still runs in the launcher's process.
        independent_gmis: its GMIs never exchange gradients or weights, so
            ``gmi.backend=auto`` may pick MIG.
        settings: reads and checks the mode's own settings from the composed config; the
            result reaches ``ModeFacts.settings`` and ``RunPlan.mode_settings``.
        not_searched: why the planner cannot search this mode's shape; empty where it can.
        rate: the ``RunResult.rates`` entry a planner trial maximises; empty: env steps/s.
        trial_overrides: what a planner trial sets, given its length in env steps per env.
        group: the config group only this mode reads (``serve``, ``gmi.async``): set in
            another mode, it is refused.
    """

    name: str
    summary: str
    body: Body
    check: Callable[[ModeFacts], ModeTerms] = lambda facts: ModeTerms()
    trains: bool = True
    records_video: bool = False
    in_one_process: Callable[[RunPlan], bool] = lambda plan: False
    independent_gmis: bool = False
    settings: Callable[[Any], Any] = lambda cfg: None
    claim: Claim | None = None
    not_searched: str = ""
    rate: str = ""
    trial_overrides: Callable[[int], dict[str, Any]] = lambda steps: {}
    group: str = ""
