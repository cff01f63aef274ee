"""rl-games patch: load checkpoints without running code from them.

rl-games reads checkpoints with ``torch.load(weights_only=False)``, so unpickling a file may call
any function it names: playing or resuming from a checkpoint someone handed over could run a shell
command. Every rl-games load (agents' and players' ``restore``) goes through
``torch_ext.load_checkpoint`` and its ``torch_ext.safe_load``; both are replaced by readers built
on :func:`~isaacgymenvs_gmi.config.checkpoint_file.read_checkpoint`: ``weights_only=True``, only
the numpy globals rl-games' own state needs, tensors mapped to the CPU (``load_state_dict`` copies
them onto the model's device), and a ``ConfigError`` on ``checkpoint`` for a file it refuses.

As rl-games does, the ``_orig_mod.`` prefix that ``torch.compile`` puts on a compiled model's keys
is dropped from the ``model`` state; the central value net's state (``assymetric_vf_nets``) gets
the same treatment, since rl-games restores into uncompiled nets. Applied by :func:`apply`;
idempotent.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from rl_games.algos_torch import torch_ext

from isaacgymenvs_gmi.config.checkpoint_file import (
    CENTRAL_VALUE_KEY,
    read_checkpoint,
    without_compile_prefix,
)

log = logging.getLogger(__name__)

_ORIGINAL = (torch_ext.safe_load, torch_ext.load_checkpoint)


def safe_load(filename: str | os.PathLike[str]) -> dict[str, Any]:
    """Replacement for ``torch_ext.safe_load``: the checkpoint's state, loaded as plain data."""
    return read_checkpoint(filename, map_location="cpu")


def load_checkpoint(filename: str | os.PathLike[str]) -> dict[str, Any]:
    """Replacement for ``torch_ext.load_checkpoint``: :func:`safe_load` with the model keys of
    a compiled model made to match the uncompiled one."""
    log.info("loading checkpoint %s", filename)
    state = safe_load(filename)
    for key in ("model", CENTRAL_VALUE_KEY):
        if isinstance(state.get(key), dict):
            state[key] = without_compile_prefix(state[key])
    return state


def apply() -> None:
    torch_ext.safe_load = safe_load
    torch_ext.load_checkpoint = load_checkpoint


def revert() -> None:
    torch_ext.safe_load, torch_ext.load_checkpoint = _ORIGINAL
