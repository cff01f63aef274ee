"""A mode as a plug-in: what it checks before any process starts, and what every GMI then runs.

The launcher knows modes only through this shape: it asks the registered :class:`Mode` of
``gmi.mode`` to check the plan's facts (a :class:`~isaacgymenvs_gmi.config.ConfigError` naming
the key, before any simulator, process or file exists), and hands its ``body`` to the GMIs. A
mode's telemetry (its progress line, its TensorBoard tags, its closing summary) lives in its own
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
        gmi: ``gmi.*`` settings.
        layout: where the GMIs go (nodes x devices x GMIs per device).
        train_params: the resolved ``train.params`` node, as rl-games will read it.
        num_envs: envs per GMI as given (not yet known to be a count: the train checks name it).
        train: the typed train settings.
        backend: the GMI backend after ``auto`` (cpu, mps, mig, direct).
        cuda: whether a CUDA device is visible.
        settings: the mode's own typed settings (what its ``Mode.settings`` read from the
            config), or None.
        task_name: the task (``task_name``).
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
    """A switch elsewhere in the config that selects a mode (upstream's ``pbt.enabled=True``
    selects PBT): the run is then that mode's with ``gmi.mode`` left at its default or naming
    it, and is refused with any other.

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
        trains: whether the mode trains with the train config's PPO batch (its horizon,
            minibatch and envs are then checked to fit together).
        records_video: whether ``capture_video`` works in this mode.
        in_one_process: whether a plan of several GMIs still runs in the launcher's process
            (an in-process twin, e.g. ``gmi.async.serial``).
        independent_gmis: its GMIs never exchange gradients or weights with each other, so
            MIG's isolated instances suit them (``gmi.backend=auto`` then picks MIG where a GPU
            is partitioned).
        settings: reads and checks the mode's own settings from the whole composed config
            (``ConfigError`` naming the key); the result reaches its checks
            (``ModeFacts.settings``) and its body (``RunPlan.mode_settings``).
        claim: a switch outside ``gmi.mode`` that selects this mode, or None.
        not_searched: why the planner cannot search this mode's shape (``gmi.per_gpu=auto``,
            ``num_envs=auto``); empty where it can.
        rate: the ``RunResult.rates`` entry a planner trial of this mode maximises; empty for
            env steps/s over the trial's epochs.
        trial_overrides: what a planner trial of this mode sets, given the trial's length in
            env steps per env (serve: ``serve.steps`` to it, no recording); a training mode's
            trials are bounded by their epochs and set nothing.
        group: the config group only this mode reads (``serve``, ``gmi.async``): its
            ``settings`` are checked in every mode, and a value other than the default is
            refused in another mode, naming its key, as it would change nothing.
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
