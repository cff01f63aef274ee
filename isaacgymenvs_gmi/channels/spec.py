"""Which kinds ride in which channel, and how a channel's rows are laid out in bytes.

``multi`` (the paper's design): one channel per kind, so the compressor can grow each transfer
of one contiguous tensor. ``uni`` (the baseline): every kind packed into one byte row per env,
one channel, sent step by step. Either way a channel is a list of kinds at byte offsets in a row.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import torch

from .kinds import KindSpec

ChannelMode = Literal["multi", "uni"]


@dataclass(frozen=True)
class ChannelSpec:
    """Channel ``index``: its ``kinds`` side by side in a row of ``row_bytes`` per env."""

    index: int
    name: str
    kinds: tuple[KindSpec, ...]

    @property
    def offsets(self) -> tuple[int, ...]:
        return tuple(itertools.accumulate([0, *(k.row_bytes for k in self.kinds)]))[:-1]

    @property
    def row_bytes(self) -> int:
        return sum(k.row_bytes for k in self.kinds)

    def pack(self, rows: torch.Tensor, step: dict[str, torch.Tensor], at: int = 0) -> None:
        """Write ``step`` (kind -> (s, N, *shape) tensors, any device) into steps
        ``[at, at + s)`` of ``rows`` ((S, N, row_bytes) uint8, a transport slot)."""
        for kind, offset in zip(self.kinds, self.offsets, strict=True):
            data = step[kind.name]
            s, n = data.shape[0], data.shape[1]
            rows[at : at + s, :, offset : offset + kind.row_bytes].copy_(_as_bytes(data, s, n))

    def unpack(self, rows: torch.Tensor, into: dict[str, torch.Tensor], at: int) -> None:
        """Copy ``rows`` ((s, N, row_bytes) uint8) into steps ``[at, at + s)`` of the
        (T, N, *shape) tensors in ``into``."""
        s, n = rows.shape[0], rows.shape[1]
        for kind, offset in zip(self.kinds, self.offsets, strict=True):
            dest = into[kind.name][at : at + s]
            _as_bytes(dest, s, n).copy_(rows[:, :, offset : offset + kind.row_bytes])


def _as_bytes(t: torch.Tensor, steps: int, envs: int) -> torch.Tensor:
    """(steps, envs, row_bytes) uint8 view of a contiguous (steps, envs, ...) tensor."""
    return t.contiguous().reshape(steps, envs, -1).view(torch.uint8)


def channel_specs(mode: ChannelMode, kinds: tuple[KindSpec, ...]) -> tuple[ChannelSpec, ...]:
    """The channels of ``mode`` for ``kinds`` (:func:`~.kinds.experience_kinds`: each with
    bytes, ``states`` only with a central value net)."""
    if mode == "uni":
        return (ChannelSpec(0, "experience", kinds),)
    return tuple(ChannelSpec(i, k.name, (k,)) for i, k in enumerate(kinds))
