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
from .paths import check_writable_folder
from .ppo_values import check_epoch_limit
from .schema import Flag

_NAME = re.compile(r"^[A-Za-z0-9_.+=@,-]+$")  # letters, digits and a few safe punctuation marks
# a run folder is the name plus rl-games' date suffix (``_26-11-14-05``): under 255 bytes
MAX_NAME = 200
SEED_MAX = 2**32 - 1  # numpy's seeds: every GMI's (seed + its id) must stay within


def check_name(key: str, value: Any) -> None:
    """``value`` can be a single folder name."""
    text = str(value)
    if len(text) > MAX_NAME:
        raise ConfigError(key, value, f"must be at most {MAX_NAME} characters (a folder name)")
    if not text.strip() or text in (".", "..") or not _NAME.match(text) or ".." in text:
        raise ConfigError(
            key,
            value,
            "must be a folder name (letters, digits, _ . - + = @ ,), not a path: no '/', "
            "'\\', '..' or spaces",
        )


def check_run_inputs(cfg: Any) -> None:
    """Check the top-level keys of the composed config (raises :class:`ConfigError`)."""
    seed = select(cfg, "seed")
    if isinstance(seed, bool) or not isinstance(seed, int) or not -1 <= seed <= SEED_MAX:
        raise ConfigError(
            "seed", seed, f"must be an integer in [0, {SEED_MAX}], or -1 for a random seed"
        )
    iterations = select(cfg, "max_iterations")
    if iterations not in (None, ""):
        check_epoch_limit("max_iterations", iterations)
    for key in ("test", "torch_deterministic"):
        Flag(optional=True).check(key, select(cfg, key))
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
    if train_dir is not None and not select(cfg, "test"):  # playing writes no run folder
        check_writable_folder("train_dir", str(train_dir))


def check_gmi_seeds(seed: int, gmis: int) -> None:
    """GMI ``i`` seeds numpy with ``seed + i``: the last one must stay in numpy's range."""
    if seed + gmis - 1 > SEED_MAX:
        raise ConfigError(
            "seed",
            seed,
            f"must be <= {SEED_MAX - gmis + 1} with {gmis} GMIs (GMI {gmis - 1} seeds with "
            f"seed + {gmis - 1}, numpy's seeds end at {SEED_MAX})",
        )
