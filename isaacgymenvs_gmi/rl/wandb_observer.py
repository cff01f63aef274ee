"""Weights & Biases logging of a run, as IsaacGymEnvs does it: started by GMI 0 before rl-games
creates its TensorBoard writer (so every scalar it writes is synced), with the run's whole
composed config logged and saved as a file of the run, and optionally its code."""

from __future__ import annotations

import os
from typing import Any

import yaml
from rl_games.common.algo_observer import AlgoObserver

from isaacgymenvs_gmi.config.wandb import WandbSettings

CONFIG_FILE = "isaacgymenvs_gmi_config.yaml"


class WandbObserver(AlgoObserver):
    """Starts the wandb run in ``before_init``; :meth:`finish` ends it (call it once the run is
    over, also when it failed)."""

    def __init__(self, settings: WandbSettings, run_config: dict[str, Any], train_dir: str):
        super().__init__()
        self.settings = settings
        self.run_config = run_config
        self.train_dir = train_dir
        self.run = None

    def before_init(self, base_name, config, experiment_name) -> None:
        import wandb

        s = self.settings
        os.makedirs(self.train_dir, exist_ok=True)
        self.run = wandb.init(
            project=s.project,
            entity=s.entity or None,
            group=s.group or None,
            name=s.name or experiment_name,
            tags=list(s.tags),
            config=self.run_config,
            dir=self.train_dir,
            sync_tensorboard=True,
        )
        with open(os.path.join(self.run.dir, CONFIG_FILE), "w") as f:
            yaml.safe_dump(self.run_config, f, sort_keys=False)
        if s.logcode_dir:
            self.run.log_code(root=s.logcode_dir)

    def log_video(self, path, step: int) -> None:
        """A finished mp4 of env 0 (``capture_video``), recorded from env step ``step``."""
        if self.run is not None:
            import wandb

            self.run.log({"videos": wandb.Video(str(path), format="mp4"), "video_step": step})

    def finish(self, failed: bool = False) -> None:
        if self.run is not None:
            self.run.finish(exit_code=1 if failed else 0)
            self.run = None
