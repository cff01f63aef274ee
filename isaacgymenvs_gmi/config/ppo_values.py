"""Up-front checks of the numbers rl-games' PPO reads from ``train.params.config``.

rl-games reads these deep inside agent construction or only at the end of an epoch (a string
``max_epochs`` fails after the first one), and takes nonsense (``gamma=5``, a negative clip)
without complaint. Each is checked here, before any process starts: type and the range the
algorithm needs. Sizes (horizon, minibatch, mini-epochs) are checked in :mod:`.train_checks`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from ._values import check_int
from .errors import ConfigError, one_of

_PREFIX = "train.params.config"
LR_SCHEDULES = ("adaptive", "linear", "identity", None)

# key: (low, high, low inclusive, high inclusive); None = no bound on that side.
_RANGES: dict[str, tuple[float | None, float | None, bool, bool]] = {
    "learning_rate": (0.0, None, False, True),
    "gamma": (0.0, 1.0, False, True),
    "tau": (0.0, 1.0, False, True),
    "e_clip": (0.0, None, False, True),
    "entropy_coef": (0.0, None, True, True),
    "critic_coef": (0.0, None, True, True),
    "grad_norm": (0.0, None, False, True),
    "kl_threshold": (0.0, None, False, True),
    "bounds_loss_coef": (0.0, None, True, True),
    "weight_decay": (0.0, None, True, True),
}
# Counts rl-games reads with config.get and uses as sizes or periods (its defaults otherwise).
_COUNTS = {"games_to_track": 1, "seq_length": 1, "bptt_length": 1, "epochs_between_resets": 0}
# Names it compares with == and silently ignores when they match none (schedule_type: the
# adaptive learning rate's update; bound_loss_type: the bounds loss).
_CHOICES = {"schedule_type": ("legacy", "standard"), "bound_loss_type": ("bound", "regularisation")}
_OPTIONAL = {"bounds_loss_coef", "weight_decay", "kl_threshold", "grad_norm", "entropy_coef"}


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _range_text(low, high, low_in, high_in) -> str:
    if high is None:
        return f"must be a number {'>=' if low_in else '>'} {low:g}"
    left, right = "[" if low_in else "(", "]" if high_in else ")"
    return f"must be a number in {left}{low:g}, {high:g}{right}"


def check_number(key: str, value: Any, bounds: tuple) -> float:
    low, high, low_in, high_in = bounds
    text = _range_text(*bounds)
    if not _is_number(value):
        raise ConfigError(key, value, text)
    if low is not None and (value < low or (value == low and not low_in)):
        raise ConfigError(key, value, text)
    if high is not None and (value > high or (value == high and not high_in)):
        raise ConfigError(key, value, text)
    return float(value)


def check_epoch_limit(key: str, value: Any) -> int:
    """An epoch or frame limit: an integer >= 1, or -1 for none."""
    text = "must be an integer >= 1, or -1 for no limit"
    integral = _is_number(value) and float(value).is_integer()
    if (isinstance(value, bool) or not isinstance(value, int | str)) and not integral:
        raise ConfigError(key, value, text)
    try:
        number = int(str(value).strip()) if isinstance(value, str) else int(value)
    except ValueError:
        raise ConfigError(key, value, text) from None
    if number < 1 and number != -1:
        raise ConfigError(key, value, text)
    return number


def validate_ppo_values(train_params: Mapping[str, Any], *, max_epochs_key: str) -> None:
    """Check the PPO numbers in ``train.params`` (raises :class:`ConfigError` naming the key).

    ``max_epochs_key``: the key to name for a bad epoch limit (``max_iterations`` when the user
    set it on the command line, else ``train.params.config.max_epochs``).
    """
    config = train_params.get("config", train_params)
    for name, bounds in _RANGES.items():
        if name in config or name not in _OPTIONAL:
            check_number(f"{_PREFIX}.{name}", config.get(name), bounds)
    schedule = config.get("lr_schedule")
    if schedule not in LR_SCHEDULES:
        raise ConfigError(f"{_PREFIX}.lr_schedule", schedule, one_of(LR_SCHEDULES[:-1]))
    if config.get("max_epochs") is not None:
        check_epoch_limit(max_epochs_key, config["max_epochs"])
    if config.get("max_frames") is not None:
        check_epoch_limit(f"{_PREFIX}.max_frames", config["max_frames"])
    for name in ("save_frequency", "save_best_after"):
        value = config.get(name)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 0
        ):
            raise ConfigError(f"{_PREFIX}.{name}", value, "must be an integer >= 0")
    if "score_to_win" in config and not _is_number(config["score_to_win"]):
        raise ConfigError(f"{_PREFIX}.score_to_win", config["score_to_win"], "must be a number")
    for name, minimum in _COUNTS.items():
        if config.get(name) is not None:
            check_int(f"{_PREFIX}.{name}", config[name], minimum=minimum)
    for name, allowed in _CHOICES.items():
        if name in config and config[name] not in allowed:
            raise ConfigError(f"{_PREFIX}.{name}", config[name], one_of(allowed))
    if config.get("adv_rms_momentum") is not None:
        check_number(
            f"{_PREFIX}.adv_rms_momentum", config["adv_rms_momentum"], (0.0, 1.0, False, True)
        )
