"""Up-front checks of the top-level keys of ``python train.py ...``: seed, limits, switches and
the names that become folders.

``experiment`` (and the rl-games run name and ``full_experiment_name`` it fills) is a folder
*name* under ``train_dir``, never a path: a separator or ``..`` would write outside ``runs/``.
"""

from __future__ import annotations

import re
from typing import Any

from ._values import select
from .errors import ConfigError
from .ppo_values import check_epoch_limit
from .upstream_switches import refuse_unsupported

_NAME = re.compile(r"^[A-Za-z0-9_.+=@,-]+$")  # letters, digits and a few safe punctuation marks


def check_name(key: str, value: Any) -> None:
    """``value`` can be a single folder name."""
    text = str(value)
    if not text.strip() or text in (".", "..") or not _NAME.match(text) or ".." in text:
        raise ConfigError(
            key,
            value,
            "must be a folder name (letters, digits, _ . - + = @ ,), not a path: no '/', "
            "'\\', '..' or spaces",
        )


def _flag(cfg: Any, key: str) -> None:
    value = select(cfg, key)
    if value is not None and not isinstance(value, bool):
        raise ConfigError(key, value, "must be True or False")


def check_run_inputs(cfg: Any) -> None:
    """Check the top-level keys of the composed config (raises :class:`ConfigError`)."""
    refuse_unsupported(cfg)
    seed = select(cfg, "seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < -1:
        raise ConfigError("seed", seed, "must be an integer >= 0, or -1 for a random seed")
    iterations = select(cfg, "max_iterations")
    if iterations not in (None, ""):
        check_epoch_limit("max_iterations", iterations)
    for key in ("test", "torch_deterministic"):
        _flag(cfg, key)
    experiment = select(cfg, "experiment")
    if experiment not in (None, ""):
        check_name("experiment", experiment)
    for key in ("train.params.config.name", "train.params.config.full_experiment_name"):
        value = select(cfg, key)
        if value not in (None, ""):
            check_name(key, value)
    full = select(cfg, "full_experiment_name")
    if full not in (None, ""):
        check_name("full_experiment_name", full)
    train_dir = select(cfg, "train_dir")
    if train_dir is not None and not str(train_dir).strip():
        raise ConfigError("train_dir", train_dir, "must name a folder (default: runs)")
