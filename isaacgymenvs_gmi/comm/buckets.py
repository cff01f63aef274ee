"""The one gradient path: flatten into buckets, reduce each, unflatten back into ``.grad``.

Consecutive parameters share a bucket up to ``bucket_elems`` elements (a larger parameter gets
a bucket of its own; the transport chunks it). Buckets are preallocated float32 buffers on the
gradients' device, built once per set of parameters that have gradients, so a steady-state
update allocates nothing. A transport that needs host memory stages a GPU bucket itself
(:class:`~isaacgymenvs_gmi.comm.routing.RoutedCollectives`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import torch

DEFAULT_BUCKET_ELEMS = 1 << 20  # float32 elements (4 MiB), the shared-memory row size

Reduce = Callable[[torch.Tensor], None]  # in place on a 1-D float32 tensor


@dataclass
class Bucket:
    index: list[int]  # positions in the parameter list
    sizes: list[int]
    flat: torch.Tensor  # (sum(sizes),) float32 on the gradients' device


def bucket_groups(sizes: list[int], bucket_elems: int) -> list[list[int]]:
    """Group consecutive tensor positions so each group holds <= ``bucket_elems`` elements
    (a tensor over the limit is alone in its group)."""
    groups: list[list[int]] = []
    filled = bucket_elems
    for i, n in enumerate(sizes):
        if filled + n > bucket_elems:
            groups.append([])
            filled = 0
        groups[-1].append(i)
        filled += n
    return groups


class GradientBuckets:
    """Reduces the gradients of a fixed list of parameters, bucket by bucket."""

    def __init__(self, bucket_elems: int = DEFAULT_BUCKET_ELEMS):
        self.bucket_elems = int(bucket_elems)
        self._plans: dict[tuple, list[Bucket]] = {}

    def reduce(self, params: Iterable[torch.nn.Parameter], reduce: Reduce) -> int:
        """Replace every ``.grad`` of ``params`` (those that have one) by ``reduce`` of it.
        Returns the number of buckets reduced."""
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return 0
        buckets = self._buckets(grads)
        for bucket in buckets:
            chosen = [grads[i].reshape(-1) for i in bucket.index]
            if grads[0].dtype == torch.float32:
                torch.cat(chosen, out=bucket.flat)
            else:
                bucket.flat.copy_(torch.cat(chosen).float())
            reduce(bucket.flat)
            with torch.no_grad():
                pieces = bucket.flat.split(bucket.sizes)
                for i, piece in zip(bucket.index, pieces, strict=True):
                    grads[i].copy_(piece.view_as(grads[i]))
        return len(buckets)

    def _buckets(self, grads: list[torch.Tensor]) -> list[Bucket]:
        key = tuple((g.numel(), g.device.type, g.dtype) for g in grads)
        if key not in self._plans:
            sizes = [g.numel() for g in grads]
            self._plans[key] = [
                Bucket(
                    index=group,
                    sizes=[sizes[i] for i in group],
                    flat=torch.empty(sum(sizes[i] for i in group), device=grads[0].device),
                )
                for group in bucket_groups(sizes, self.bucket_elems)
            ]
        return self._plans[key]
