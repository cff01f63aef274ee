"""Up-front checks of the numbers rl-games' PPO reads from ``train.params.config``.

rl-games reads these deep inside agent construction or only at the end of an epoch (a string
``max_epochs`` fails after the first one), and takes nonsense (``gamma=5``, a negative clip)
without complaint. Each is checked here, before any process starts: type and the range the
algorithm needs. Sizes (horizon, minibatch, mini-epochs) are checked in :mod:`.train_checks`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ConfigError, one_of
from .schema import Choice, Int, Real, integer, real

_PREFIX = "train.params.config"
LR_SCHEDULES = ("adaptive", "linear", "identity", None)
POSITIVE = Real(0.0, open_low=True)
_NON_NEGATIVE = Real(0.0)
_UNIT = Real(0.0, 1.0, open_low=True)  # a discount or a momentum: (0, 1]

# Numbers rl-games' PPO needs, and the optional ones (checked when given; null where rl-games
# reads it with a default).
_NUMBERS = {"learning_rate": POSITIVE, "gamma": _UNIT, "tau": _UNIT, "e_clip": POSITIVE}
_NUMBERS.update(critic_coef=_NON_NEGATIVE)
_OPTIONAL = {
    "entropy_coef": _NON_NEGATIVE,
    "grad_norm": POSITIVE,
    "kl_threshold": POSITIVE,
    "bounds_loss_coef": _NON_NEGATIVE,
    "weight_decay": _NON_NEGATIVE,
    "adv_rms_momentum": Real(0.0, 1.0, open_low=True, optional=True),
    "score_to_win": Real(),
    # Counts rl-games reads with config.get and uses as sizes or periods (its defaults otherwise).
    "games_to_track": Int(1, optional=True),
    "seq_length": Int(1, optional=True),
    "bptt_length": Int(1, optional=True),
    "epochs_between_resets": Int(0, optional=True),
    "save_frequency": Int(0, optional=True),
    "save_best_after": Int(0, optional=True),
    # Names it compares with == and silently ignores when they match none (schedule_type: the
    # adaptive learning rate's update; bound_loss_type: the bounds loss).
    "schedule_type": Choice(("legacy", "standard")),
    "bound_loss_type": Choice(("bound", "regularisation")),
}


def check_epoch_limit(key: str, value: Any) -> int:
    """An epoch or frame limit: an integer >= 1 (a whole float too), or -1 for none."""
    number = real(value)
    limit = integer(int(number) if number is not None and number.is_integer() else value)
    if limit is None or (limit < 1 and limit != -1):
        raise ConfigError(key, value, "must be an integer >= 1, or -1 for no limit")
    return limit


def validate_ppo_values(train_params: Mapping[str, Any], *, max_epochs_key: str) -> None:
    """Check the PPO numbers in ``train.params`` (raises :class:`ConfigError` naming the key).

    ``max_epochs_key``: the key to name for a bad epoch limit (``max_iterations`` when the user
    set it on the command line, else ``train.params.config.max_epochs``).
    """
    config = train_params.get("config", train_params)
    for name, kind in _NUMBERS.items():
        kind.check(f"{_PREFIX}.{name}", config.get(name))
    for name, kind in _OPTIONAL.items():
        if name in config:
            kind.check(f"{_PREFIX}.{name}", config[name])
    schedule = config.get("lr_schedule")
    if schedule not in LR_SCHEDULES:
        raise ConfigError(f"{_PREFIX}.lr_schedule", schedule, one_of(LR_SCHEDULES[:-1]))
    if config.get("max_epochs") is not None:
        check_epoch_limit(max_epochs_key, config["max_epochs"])
    if config.get("max_frames") is not None:
        check_epoch_limit(f"{_PREFIX}.max_frames", config["max_frames"])
