"""Typed form of what the runtime reads of the training settings, built once at the edge.

rl-games reads ``train.params`` itself; the GMI runtime needs only a few values from it and from
the top-level IsaacGymEnvs keys, and reads them here, so no raw config dict is dug into below
the launch module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ._values import select
from .schema import Int, Real


@dataclass(frozen=True)
class TrainSettings:
    """Attributes:
    horizon_length: env steps per GMI per epoch (``train.params.config.horizon_length``).
    torch_deterministic: deterministic torch kernels (IsaacGymEnvs ``torch_deterministic``).
    sigma: fixed policy standard deviation for a loaded checkpoint (IsaacGymEnvs ``sigma``),
        ``None`` to keep the network's.
    central_value: the train config has a central value (asymmetric critic) net.
    experiment_name: ``full_experiment_name`` (a run folder name), ``None`` for rl-games' own.
    train_dir: folder for checkpoints and summaries (``train_dir``).
    value_bootstrap: time-outs are truncations whose value is bootstrapped
        (``train.params.config.value_bootstrap``, as rl-games reads it).
    """

    horizon_length: int
    torch_deterministic: bool
    sigma: float | None
    central_value: bool
    experiment_name: str | None
    train_dir: str
    value_bootstrap: bool = False

    @classmethod
    def from_cfg(cls, cfg: Any) -> TrainSettings:
        """From the composed top-level config (raises :class:`ConfigError` naming the key)."""
        config = select(cfg, "train.params.config", {}) or {}
        horizon = Int(1).check("train.params.config.horizon_length", config.get("horizon_length"))
        return cls(
            horizon_length=horizon,
            torch_deterministic=bool(select(cfg, "torch_deterministic", False)),
            sigma=Real(optional=True).check("sigma", select(cfg, "sigma", "")),
            central_value=config.get("central_value_config") is not None,
            experiment_name=select(cfg, "full_experiment_name"),
            train_dir=str(select(cfg, "train_dir") or "runs"),
            value_bootstrap=bool(config.get("value_bootstrap", False)),
        )
