"""A validated run, as every GMI receives it (light imports only: it is unpickled in fresh
worker processes before they set their thread and device environment)."""

from __future__ import annotations

from dataclasses import dataclass

from isaacgymenvs_gmi.config import GmiConfig, SimSettings
from isaacgymenvs_gmi.gmi.layout import GmiLayout


@dataclass(frozen=True)
class RunPlan:
    """What to simulate, where, and how to train; identical on every GMI."""

    task_name: str
    num_envs: int  # per GMI, as in IsaacGymEnvs multi-GPU training
    seed: int  # base seed; GMI i uses seed + i
    sim: SimSettings
    gmi: GmiConfig
    gmi_backend: str  # cpu | mps | mig | direct, after "auto" is resolved
    layout: GmiLayout
    test: bool
    checkpoint: str | None
    under_torchrun: bool = False  # ranks were started by torchrun, not by us

    @property
    def world_size(self) -> int:
        return self.layout.world_size
