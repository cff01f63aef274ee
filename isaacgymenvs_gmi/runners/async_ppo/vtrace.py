"""V-trace targets (IMPALA, Espeholt et al. 2018, Sec. 4.1) for experience from older policies.

With truncated ratios ``rho_t = min(rho_bar, pi/mu)``, ``c_t = lambda min(c_bar, pi/mu)``
(lambda: the train config's GAE ``tau``), the value target is computed backwards as
``v_s - V(x_s) = delta_s + gamma c_s (v_{s+1} - V(x_{s+1}))`` with
``delta_t = rho_t (r_t + gamma V(x_{t+1}) - V(x_t))``; the advantage is
``rho_s (r_s + gamma v_{s+1} - V(x_s))``.

A *terminated* step has no future (``V(x_{t+1}) = 0``); a *truncated* one bootstraps from its
final observation's value, passed in ``next_values`` (the env has already reset); nothing flows
back across an episode end. On-policy with ``rho_bar = c_bar = 1`` this is GAE(lambda).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class VTraceTargets:
    """Attributes:
    values: (T, N) v_s, the value targets.
    advantages: (T, N) policy-gradient advantages ``rho_s (r_s + gamma v_{s+1} - V(x_s))``.
    rhos: (T, N) the truncated importance ratios used (for logging how off-policy data was).
    """

    values: torch.Tensor
    advantages: torch.Tensor
    rhos: torch.Tensor


def next_values_for(
    values: torch.Tensor, bootstrap: torch.Tensor, final_values: torch.Tensor, done: torch.Tensor
) -> torch.Tensor:
    """(T, N) ``V(x_{t+1})`` for every step of a chunk.

    Args:
        values: (T, N) the trainer's V(x_t).
        bootstrap: (N,) V of the observation after the chunk's last step.
        final_values: (T, N) V of each step's final observation where an episode ended there
            (stored by the actor; read only where ``done``).
        done: (T, N) bool, the episode ended at this step (terminated or truncated).
    """
    following = torch.cat([values[1:], bootstrap.unsqueeze(0)], dim=0)
    return torch.where(done, final_values, following)


@torch.no_grad()
def vtrace(
    log_rhos: torch.Tensor,
    values: torch.Tensor,
    next_values: torch.Tensor,
    rewards: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    lam: float = 1.0,
) -> VTraceTargets:
    """V-trace targets for a chunk of T steps of N envs (all (T, N), time first).

    Args:
        log_rhos: log pi(a_t|x_t) - log mu(a_t|x_t).
        values: V(x_t) under the trainer's critic.
        next_values: V(x_{t+1}) (see :func:`next_values_for`); ignored where terminated.
        rewards: r_t.
        terminated, truncated: bool, how the episode ended at t (neither: it goes on).
        gamma: discount; ``rho_bar``, ``c_bar``: truncation levels (IMPALA's defaults, 1);
        lam: the traces' lambda (1: IMPALA's plain V-trace).
    """
    if rho_bar < c_bar:
        raise ValueError(f"V-trace needs rho_bar >= c_bar (got {rho_bar} < {c_bar})")
    ratios = torch.exp(log_rhos)
    rhos = torch.clamp(ratios, max=rho_bar)
    cs = lam * torch.clamp(ratios, max=c_bar)
    live = (~terminated).to(values.dtype)  # a future to bootstrap from
    carry = (~(terminated | truncated)).to(values.dtype)  # the next step is the same episode
    deltas = rhos * (rewards + gamma * live * next_values - values)
    corrections = torch.zeros_like(values)
    acc = torch.zeros_like(values[0])
    for t in range(values.shape[0] - 1, -1, -1):
        acc = deltas[t] + gamma * cs[t] * carry[t] * acc
        corrections[t] = acc
    vs = values + corrections
    # v_{s+1} within the episode, else the bootstrap value (0 after a termination)
    vs_next = torch.cat([vs[1:], next_values[-1:]], dim=0)
    q_next = torch.where(carry.bool(), vs_next, next_values)
    advantages = rhos * (rewards + gamma * live * q_next - values)
    return VTraceTargets(values=vs, advantages=advantages, rhos=rhos)
