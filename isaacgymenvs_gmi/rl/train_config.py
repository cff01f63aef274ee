"""The dict rl-games' Runner expects, from the resolved ``train.params`` (IsaacGymEnvs' way)."""

from __future__ import annotations

import copy
import logging
from typing import Any

from isaacgymenvs_gmi.config import TrainSettings

log = logging.getLogger(__name__)


def rlgames_params(
    train_params: dict[str, Any],
    train: TrainSettings,
    *,
    rl_device: str,
    seed: int,
    num_envs: int,
    threads: int,
    train_dir: str | None = None,
) -> dict[str, Any]:
    """A copy of ``train_params`` (the resolved ``train.params``) with the run-time settings
    IsaacGymEnvs adds for one process; ``train_dir`` (when given) replaces the run folder. Never
    passes ``multi_gpu`` through: rl-games would call ``init_process_group("nccl")`` itself."""
    params = copy.deepcopy(train_params)
    params["seed"] = seed
    # rl-games sizes torch's pool from os.cpu_count(), blind to a GMI's core set: two OpenMP
    # threads spinning on one core made 1-core GMIs ~30x slower. Size it to our cores instead.
    params["torch_threads"] = threads
    config = params["config"]
    config["device"] = rl_device
    config["device_name"] = rl_device  # rl-games players read this key, not "device"
    config["multi_gpu"] = False
    config["num_actors"] = num_envs
    config["population_based_training"] = False
    config["pbt_idx"] = None
    config["full_experiment_name"] = train.experiment_name
    config["train_dir"] = train_dir or train.train_dir
    config["print_stats"] = False  # our progress line replaces rl-games' fps line
    if not rl_device.startswith("cuda"):
        # compilation costs more than it gains on the CPU: off unless the train config asks
        config.setdefault("torch_compile", False)
        config["mixed_precision"] = False  # rl-games' bf16 autocast is CUDA-only
    player = config.setdefault("player", {})
    player.setdefault("games_num", num_envs)  # one episode per env, then report the mean
    apply_model_size_multiplier(params)
    return params


def apply_model_size_multiplier(params: dict[str, Any]) -> None:
    mlp = params.get("network", {}).get("mlp", {})
    factor = mlp.get("model_size_multiplier", 1)
    if factor != 1:
        mlp["units"] = [u * factor for u in mlp["units"]]
        log.info("MLP units scaled by %s to %s", factor, mlp["units"])
