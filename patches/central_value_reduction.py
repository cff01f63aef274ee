"""rl-games patch: the central value (asymmetric critic) net reduces its gradients across GMIs.

rl-games' ``CentralValueTrain`` averages its gradients only when ``multi_gpu`` is set, with one
flat all-reduce on the default process group, between ``backward`` and gradient clipping. We
never set ``multi_gpu``. Instead its optimizer gets a step pre-hook that runs the GMI gradient
reduction and then the clipping rl-games would have done (its own ``truncate_grads`` is turned
off, so clipping still happens once, after the reduction, as in rl-games' multi-GPU order).
Applied per agent by :func:`reduce_critic_gradients`; idempotent.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch.nn.utils import clip_grad_norm_

AverageGradients = Callable[[Iterable[torch.nn.Parameter]], None]


def reduce_critic_gradients(critic, average_gradients: AverageGradients) -> None:
    """``critic``: an rl-games ``CentralValueTrain``. ``average_gradients``: the GMI reduction
    (replaces every parameter's ``.grad`` with its mean over GMIs), passed in."""
    if getattr(critic, "_gmi_reduction_hook", None) is not None:
        return
    clip, max_norm = bool(critic.truncate_grads), critic.grad_norm
    critic.truncate_grads = False
    params = list(critic.model.parameters())

    def before_step(_optimizer: torch.optim.Optimizer, _args, _kwargs) -> None:
        average_gradients(params)
        if clip:
            clip_grad_norm_(params, max_norm)

    critic._gmi_reduction_hook = critic.optimizer.register_step_pre_hook(before_step)
