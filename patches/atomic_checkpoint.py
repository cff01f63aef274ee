"""rl-games patch: write checkpoints atomically.

rl-games saves with ``torch.save(state, path)`` straight into the final file, so a process killed
mid-write leaves a truncated checkpoint that no longer loads. We write to a temporary file in the
same folder, flush it to disk, and ``os.replace`` it over the target: readers see the old file or
the new one, never half of one. Applied by :func:`apply`; idempotent.

Numbers rl-games keeps as numpy scalars (its best reward) are written as Python numbers, so
torch's default ``torch.load(path)`` (``weights_only=True``) reads every checkpoint we write.

Checkpoints also record what they were trained on, as plain strings under
``state["isaacgymenvs_gmi"]`` (see :func:`set_checkpoint_metadata`), so a later run can say which
task a checkpoint belongs to.
"""

from __future__ import annotations

import os
import tempfile

import torch
from rl_games.algos_torch import torch_ext

from isaacgymenvs_gmi.config.checkpoint_file import METADATA_KEY, plain_values

_ORIGINAL = torch_ext.save_checkpoint
_metadata: dict[str, str | int] = {}


def set_checkpoint_metadata(*, task: str | None = None) -> None:
    """Record ``task`` (the IsaacGymEnvs task name) in every checkpoint this process saves from
    now on; ``None`` records nothing. Plain str/int values only: they load with
    ``weights_only=True``."""
    _metadata.clear()
    if task is not None:
        _metadata["task"] = str(task)


def atomic_save(state: dict, path: str) -> None:
    """``torch.save(state, path)`` that never leaves a partial file at ``path``."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".pth", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_checkpoint(filename: str, state: dict) -> None:
    """Replacement for ``rl_games.algos_torch.torch_ext.save_checkpoint`` (same contract), plus
    the metadata of :func:`set_checkpoint_metadata` when there is any; numpy scalars are
    written as Python numbers, so ``torch.load(path)`` with its defaults reads the file."""
    if _metadata:
        state = {**state, METADATA_KEY: dict(_metadata)}
    atomic_save(plain_values(state), filename + ".pth")


def apply() -> None:
    torch_ext.save_checkpoint = save_checkpoint


def revert() -> None:
    torch_ext.save_checkpoint = _ORIGINAL
