"""A validated run, as every GMI receives it (light imports only: it is unpickled in fresh GMI
processes before they set their thread and device environment)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from isaacgymenvs_gmi.config import GmiConfig, SimSettings, TrainSettings
from isaacgymenvs_gmi.config.task_env import TaskEnvSettings
from isaacgymenvs_gmi.config.video import VideoSettings
from isaacgymenvs_gmi.config.wandb import WandbSettings

from .layout import GmiLayout


@dataclass(frozen=True)
class ModeTerms:
    """What a mode asks of the run once its checks pass (neutral: nothing)."""

    expendable: tuple[int, ...] = ()  # GMIs whose death the run survives (no collective waits)
    min_alive: int = 0  # of those, how many must stay alive (below, the run stops cleanly)
    pinned: tuple[int, ...] = ()  # GMIs keeping own cores when GMIs outnumber cores
    expendable_what: str = ""  # what an expendable GMI is, for the lines reporting a loss
    min_alive_key: str = ""  # the setting asking for ``min_alive``, named when too few are left


@dataclass(frozen=True)
class RunPlan:
    """What to simulate, where, and how to train; identical on every GMI. ``task_config`` and
    ``train_params``: the resolved nodes, handed unread to the task and rl-games."""

    task_name: str
    task_env: TaskEnvSettings  # what the runtime reads of task_config, typed
    seed: int  # base seed; GMI i uses seed + i (:meth:`seed_of`)
    sim: SimSettings
    gmi: GmiConfig
    gmi_backend: str  # cpu | mps | mig | direct, after "auto" is resolved
    layout: GmiLayout
    train: TrainSettings
    task_config: dict[str, Any]
    train_params: dict[str, Any]
    test: bool
    checkpoint: str | None
    under_torchrun: bool = False  # ranks were started by torchrun, not by us
    dims: tuple[int, int, int] = (0, 0, 0)  # the task's (obs, states, actions) widths
    terms: ModeTerms = ModeTerms()  # what the mode asks of the run (survivable, pinned GMIs)
    task_modules: tuple[str, ...] = ()  # imported by every GMI: they register the user's tasks
    wandb: WandbSettings = WandbSettings()
    video: VideoSettings = VideoSettings()  # capture_video: env 0 of GMI 0 on video
    run_config: dict[str, Any] | None = None  # the whole resolved config, logged when wandb is on
    mode_settings: Any = None  # the mode's own typed settings (e.g. pbt.*), None for most modes
    unread_keys: tuple[str, ...] = ()  # task.env / train.params.config keys nothing reads

    @property
    def num_envs(self) -> int:
        """Envs per GMI, as in IsaacGymEnvs multi-GPU training."""
        return self.task_env.num_envs

    def seed_of(self, gmi: int) -> int:
        """GMI ``gmi``'s seed: ``seed + gmi``, or ``seed`` on every GMI under
        ``gmi.debug.same_data``."""
        return self.seed if self.gmi.debug.same_data else self.seed + gmi

    @property
    def world_size(self) -> int:
        return self.layout.world_size

    @property
    def mode(self) -> str:
        return self.gmi.mode

    @property
    def uses_gpu(self) -> bool:
        """Whether physics or learning runs on a CUDA device."""
        return any(d.startswith("cuda") for d in (self.sim.sim_device, self.sim.rl_device))
