"""The flatten -> reduce -> unflatten path, in buckets."""

from __future__ import annotations

import pytest
import torch

from isaacgymenvs_gmi.comm.buckets import GradientBuckets, bucket_groups


@pytest.mark.parametrize(
    "sizes,cap,expected",
    [
        ([3, 3, 3], 10, [[0, 1, 2]]),
        ([3, 3, 3], 6, [[0, 1], [2]]),
        ([3, 20, 3], 6, [[0], [1], [2]]),  # a tensor over the cap is alone
        ([7], 6, [[0]]),
        ([1, 1, 1, 1], 1, [[0], [1], [2], [3]]),
    ],
)
def test_bucket_groups(sizes, cap, expected):
    assert bucket_groups(sizes, cap) == expected


def net() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ELU(), torch.nn.Linear(7, 2))


@pytest.mark.parametrize("cap", [1, 8, 40, 10_000])
def test_every_gradient_goes_through_reduce_once_and_comes_back_in_place(cap):
    model = net()
    model(torch.randn(4, 5)).sum().backward()
    before = [p.grad.clone() for p in model.parameters()]
    ids = [id(p.grad) for p in model.parameters()]
    seen: list[int] = []

    def reduce(flat: torch.Tensor) -> None:
        seen.append(flat.numel())
        flat.mul_(3.0)

    buckets = GradientBuckets(cap)
    assert buckets.reduce(model.parameters(), reduce) is None  # no riders
    assert len(seen) == len(bucket_groups([g.numel() for g in before], cap))
    assert sum(seen) == sum(g.numel() for g in before)
    for p, b in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.grad, 3.0 * b)
    assert ids == [id(p.grad) for p in model.parameters()]  # same tensors, updated in place
    flats = [b.flat.data_ptr() for b in buckets._buckets([p.grad for p in model.parameters()], 0)]
    buckets.reduce(model.parameters(), reduce)
    again = [b.flat.data_ptr() for b in buckets._buckets([p.grad for p in model.parameters()], 0)]
    assert flats == again  # steady state reuses its buffers


@pytest.mark.parametrize("cap", [1, 8, 40, 10_000])
def test_riders_are_reduced_in_the_last_gradient_bucket(cap):
    """A minibatch's scalars (its KL) cost no collective of their own, whatever the bucket
    size: they share the last bucket, which stays within the cap where it can."""
    model = net()
    model(torch.randn(4, 5)).sum().backward()
    before = [p.grad.clone() for p in model.parameters()]
    seen: list[torch.Tensor] = []

    def reduce(flat: torch.Tensor) -> None:
        seen.append(flat.clone())
        flat.mul_(0.5)

    plain = len(bucket_groups([g.numel() for g in before], cap))
    riders = torch.tensor([4.0, -2.0])
    got = GradientBuckets(cap).reduce(model.parameters(), reduce, riders)
    assert torch.equal(got, torch.tensor([2.0, -1.0]))
    assert plain <= len(seen) <= plain + 1 and torch.equal(seen[-1][-2:], riders)
    assert all(len(flat) <= max(cap, 2 + max(g.numel() for g in before)) for flat in seen)
    for p, b in zip(model.parameters(), before, strict=True):
        assert torch.equal(p.grad, 0.5 * b)


def test_parameters_without_gradients_are_skipped():
    model = net()
    model[2](torch.randn(3, 7)).sum().backward()  # only the last layer has gradients
    sizes = []
    GradientBuckets().reduce(model.parameters(), lambda flat: sizes.append(flat.numel()))
    assert sizes == [7 * 2 + 2]
    assert model[0].weight.grad is None
