"""Stop training at the first epoch that leaves a NaN or an infinity in the learner's state, its
losses or the rewards it would report.

Non-finite weights never recover: every later action is NaN and the run burns its budget. With
mixed precision the weights can stay finite while the scaler skips every update, so the epoch's
losses and the mean reward about to be reported are checked too. The check (one device sync per
epoch) runs before the epoch's progress line, statistics and checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
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


def epoch_values(result: Sequence[Any], mean_reward: Any = None) -> dict[str, Any]:
    """The values of an rl-games ``train_epoch`` ``result`` that must be finite, by name: its
    losses (``(step, play, update, total times, a_losses, c_losses[, b_losses], entropies, kls,
    lr, lr_mul)``, each a list of per-minibatch values) and ``mean_reward`` where given."""
    names = ("a_loss", "c_loss", "b_loss", "entropy", "kl")
    losses = list(result[4:-2])
    if len(losses) == 4:  # the discrete agent has no bound loss
        names = ("a_loss", "c_loss", "entropy", "kl")
    found = dict(zip(names, losses, strict=False))
    if mean_reward is not None:
        found["mean reward"] = mean_reward
    return found


def non_finite_values(values: Mapping[str, Any]) -> list[str]:
    """Names in ``values`` (numbers, arrays or tensors, or lists of them) holding NaN or inf."""
    bad = []
    for name, value in values.items():
        items = value if isinstance(value, list | tuple) else [value]
        tensors = [t.detach().reshape(-1).float() for t in items if isinstance(t, torch.Tensor)]
        others = [np.asarray(x, np.float64) for x in items if not isinstance(x, torch.Tensor)]
        finite = all(np.isfinite(x).all() for x in others)
        if finite and tensors:  # one device sync per name
            joined = torch.cat([t.to(tensors[0].device) for t in tensors])
            finite = bool(torch.isfinite(joined).all())
        if not finite:
            bad.append(name)
    return bad


def ensure_finite(
    modules: Iterable[torch.nn.Module], epoch: int, values: Mapping[str, Any] | None = None
) -> None:
    """Raise :class:`NonFiniteState` naming the tensors (and the ``values``, see
    :func:`epoch_values`) if any of ``modules`` or ``values`` went non-finite."""
    bad = non_finite_tensors(modules) + non_finite_values(values or {})
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise NonFiniteState(
            f"non-finite values (NaN or inf) in the learner after epoch {epoch}: {shown}. "
            "Training stops here; the checkpoints written before this epoch are intact. "
            "Look for exploding rewards or observations; on a GPU, "
            "train.params.config.mixed_precision=False rules out reduced precision (bf16 autocast)."
        )
