"""What keeps synchronous PPO's GMIs in lockstep beyond the mode-neutral group: gradient
averaging through the layout's reducer, episode-statistics merging and the epoch telemetry."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from isaacgymenvs_gmi.comm import Reducer
from isaacgymenvs_gmi.comm.buckets import GradientBuckets
from isaacgymenvs_gmi.gmi.group import GmiGroup

from .telemetry import EpochTelemetry


class PpoLockstep:
    """Sync-PPO exchanges of one GMI, over ``group``; ``reducer`` carries the gradients,
    ``telemetry`` records each epoch."""

    def __init__(
        self,
        group: GmiGroup,
        reducer: Reducer,
        telemetry: EpochTelemetry,
        buckets: GradientBuckets | None = None,
    ):
        self.group, self.reducer, self.telemetry = group, reducer, telemetry
        self.buckets = buckets or GradientBuckets()

    def average_gradients(self, params: Iterable[torch.nn.Parameter]) -> None:
        """Each ``.grad`` becomes its mean over GMIs: flatten into buckets, reduce, unflatten."""
        self.buckets.reduce(params, self._mean)

    def _mean(self, flat: torch.Tensor) -> None:
        self.group.guard(f"gradient {self.reducer.strategy}", lambda: self.reducer.mean(flat))

    def merge_meter(self, meter, shape: tuple[int, ...]) -> None:
        """Make an rl-games AverageMeter hold the mean over all GMIs' tracked episodes.

        ``shape``: the mean's shape as rl-games' own updates leave it (it differs per meter),
        so a GMI that has not finished an episode yet gets the same shape as the others."""
        size = float(meter.current_size)
        packed = torch.cat([meter.mean.reshape(-1).double().cpu() * size, torch.tensor([size])])
        self.group.sum_(packed, "episode statistics")
        total = packed[-1].item()
        if total > 0:
            mean = (packed[:-1] / total).to(meter.mean.dtype).reshape(shape)
            meter.mean = mean.to(meter.mean.device)
        meter.current_size = int(min(total, meter.max_size))
