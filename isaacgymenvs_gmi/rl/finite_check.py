"""Stop training at the first epoch that leaves a NaN or an infinity in the learner's state.

A policy whose weights (or normaliser statistics) went non-finite never recovers: every later
action is NaN, the physics integrates NaN states that never trip a termination check, and the
run burns its budget printing ``nan`` or nothing. Checking once per epoch costs one device sync.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class NonFiniteState(RuntimeError):
    """The learner holds NaN or infinite weights or statistics."""


def non_finite_tensors(modules: Iterable[torch.nn.Module]) -> list[str]:
    """Names of the floating-point parameters and buffers of ``modules`` holding a NaN or an
    infinity (prefixed ``<module index>.`` when there are several modules)."""
    modules = list(modules)
    names: list[str] = []
    flags: list[torch.Tensor] = []
    for i, module in enumerate(modules):
        prefix = f"{i}." if len(modules) > 1 else ""
        for name, t in [*module.named_parameters(), *module.named_buffers()]:
            if t.is_floating_point() and t.numel():
                names.append(prefix + name.replace("_orig_mod.", ""))
                flags.append(torch.isfinite(t.detach()).all())
    if not flags:
        return []
    finite = torch.stack([f.to(flags[0].device) for f in flags]).cpu()  # one sync
    return [n for n, ok in zip(names, finite.tolist(), strict=True) if not ok]


def ensure_finite(modules: Iterable[torch.nn.Module], epoch: int) -> None:
    """Raise :class:`NonFiniteState` naming the tensors if any of ``modules`` went non-finite."""
    bad = non_finite_tensors(modules)
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise NonFiniteState(
            f"non-finite values (NaN or inf) in the learner after epoch {epoch}: {shown}. "
            "Training stops here; the checkpoints written before this epoch are intact. "
            "Look for exploding rewards or observations; on a GPU, "
            "train.params.config.mixed_precision=False rules out fp16 overflow."
        )
