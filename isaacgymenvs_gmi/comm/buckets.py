"""The one gradient path: flatten into buckets, reduce each, unflatten back into ``.grad``.

Consecutive parameters share a bucket up to ``bucket_elems`` elements (a larger one gets its
own). Buckets are float32 buffers on the gradients' device, preallocated once per parameter set.
A few scalars (``riders``: a minibatch's KL) take the last places of the last bucket, reduced in
the same collective as the gradients.
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

    def reduce(
        self,
        params: Iterable[torch.nn.Parameter],
        reduce: Reduce,
        riders: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        """Replace every ``.grad`` of ``params`` (those that have one) by ``reduce`` of it.
        ``riders``: (k,) float32 on the gradients' device, reduced along; returns them
        reduced ((k,), a view of the last bucket: read it before the next reduction), or None
        without riders."""
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return None
        tensors = grads if riders is None else [*grads, riders]
        buckets = self._buckets(tensors, 0 if riders is None else riders.numel())
        for bucket in buckets:
            chosen = [tensors[i].reshape(-1) for i in bucket.index]
            if all(t.dtype == torch.float32 for t in chosen):
                torch.cat(chosen, out=bucket.flat)
            else:
                bucket.flat.copy_(torch.cat([t.float() for t in chosen]))
            reduce(bucket.flat)
            with torch.no_grad():
                pieces = bucket.flat.split(bucket.sizes)
                for i, piece in zip(bucket.index, pieces, strict=True):
                    if i < len(grads):
                        grads[i].copy_(piece.view_as(grads[i]))
        return None if riders is None else buckets[-1].flat[-riders.numel() :]

    def _buckets(self, tensors: list[torch.Tensor], riders: int) -> list[Bucket]:
        """The buckets of ``tensors``, whose last ``riders`` > 0 elements (one tensor) join
        the last bucket."""
        key = (riders, *((t.numel(), t.device.type, t.dtype) for t in tensors))
        if key not in self._plans:
            sizes = [t.numel() for t in tensors]
            grads = sizes[:-1] if riders else sizes
            groups = bucket_groups(grads, self.bucket_elems - riders)
            if riders:
                groups[-1].append(len(grads))
            self._plans[key] = [
                Bucket(
                    index=group,
                    sizes=[sizes[i] for i in group],
                    flat=torch.empty(sum(sizes[i] for i in group), device=tensors[0].device),
                )
                for group in groups
            ]
        return self._plans[key]
