"""V-trace against a NumPy reference written from the IMPALA formulas (explicit sums, not the
backward recursion the implementation uses), with terminations and truncations."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.runners.async_ppo.vtrace import next_values_for, vtrace


def reference(
    log_rhos, values, next_values, rewards, terminated, truncated, gamma, rho_bar, c_bar, lam=1.0
):
    """v_s = V_s + sum_{t=s}^{end} gamma^(t-s) (prod_{i<t} c_i) delta_t, c_i = lam min(c_bar,
    rho), the sum ending at the first step >= s where the episode ends;
    A_s = rho_s (r_s + gamma q_{s+1} - V_s)."""
    T, N = values.shape
    ratio = np.exp(log_rhos)
    rho, c = np.minimum(rho_bar, ratio), lam * np.minimum(c_bar, ratio)
    boot = np.where(terminated, 0.0, next_values)
    delta = rho * (rewards + gamma * boot - values)
    done = terminated | truncated
    vs, adv = np.zeros_like(values), np.zeros_like(values)
    for n in range(N):
        for s in range(T):
            total, weight = 0.0, 1.0
            for t in range(s, T):
                total += gamma ** (t - s) * weight * delta[t, n]
                if done[t, n]:
                    break
                weight *= c[t, n]
            vs[s, n] = values[s, n] + total
    for n in range(N):
        for s in range(T):
            inside = not done[s, n] and s + 1 < T
            q = vs[s + 1, n] if inside else boot[s, n]
            adv[s, n] = rho[s, n] * (rewards[s, n] + gamma * q - values[s, n])
    return vs, adv


def random_chunk(rng, T=12, N=5, off_policy=True):
    values = rng.normal(size=(T, N))
    bootstrap = rng.normal(size=N)
    final = rng.normal(size=(T, N))
    terminated = rng.random((T, N)) < 0.12
    truncated = (rng.random((T, N)) < 0.08) & ~terminated
    done = terminated | truncated
    next_values = next_values_for(
        torch.tensor(values), torch.tensor(bootstrap), torch.tensor(final), torch.tensor(done)
    ).numpy()
    log_rhos = rng.normal(scale=0.5, size=(T, N)) if off_policy else np.zeros((T, N))
    rewards = rng.normal(size=(T, N))
    return log_rhos, values, next_values, rewards, terminated, truncated


@pytest.mark.parametrize(
    ("rho_bar", "c_bar", "lam"),
    [(1.0, 1.0, 1.0), (2.0, 0.9, 1.0), (1.0, 0.5, 1.0), (1.0, 1.0, 0.95)],
)
def test_vtrace_matches_the_explicit_formula(rho_bar, c_bar, lam):
    rng = np.random.default_rng(7)
    for _ in range(5):
        chunk = random_chunk(rng)
        want_vs, want_adv = reference(*chunk, 0.97, rho_bar, c_bar, lam)
        got = vtrace(
            *(torch.tensor(x) for x in chunk), gamma=0.97, rho_bar=rho_bar, c_bar=c_bar, lam=lam
        )
        np.testing.assert_allclose(got.values.numpy(), want_vs, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(got.advantages.numpy(), want_adv, rtol=1e-12, atol=1e-12)


def test_on_policy_targets_are_the_discounted_return():
    rng = np.random.default_rng(3)
    log_rhos, values, next_values, rewards, terminated, truncated = random_chunk(
        rng, off_policy=False
    )
    gamma = 0.95
    T, N = values.shape
    returns = np.zeros_like(values)
    for n in range(N):
        following = next_values[T - 1, n]  # bootstrap after the chunk
        for t in range(T - 1, -1, -1):
            if terminated[t, n]:
                following = 0.0
            elif truncated[t, n]:
                following = next_values[t, n]  # the final observation's value
            following = rewards[t, n] + gamma * following
            returns[t, n] = following
    got = vtrace(
        *(torch.tensor(x) for x in (log_rhos, values, next_values, rewards, terminated, truncated)),
        gamma=gamma,
    )
    np.testing.assert_allclose(got.values.numpy(), returns, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.rhos.numpy(), 1.0)


def test_on_policy_with_lambda_the_correction_is_the_gae_advantage():
    rng = np.random.default_rng(5)
    log_rhos, values, next_values, rewards, terminated, truncated = random_chunk(
        rng, off_policy=False
    )
    gamma, lam = 0.99, 0.95
    T, N = values.shape
    gae = np.zeros_like(values)  # GAE(lambda), backwards, as PPO computes it
    for n in range(N):
        acc = 0.0
        for t in range(T - 1, -1, -1):
            boot = 0.0 if terminated[t, n] else next_values[t, n]
            delta = rewards[t, n] + gamma * boot - values[t, n]
            if terminated[t, n] or truncated[t, n]:
                acc = 0.0
            acc = delta + gamma * lam * acc
            gae[t, n] = acc
    got = vtrace(
        *(torch.tensor(x) for x in (log_rhos, values, next_values, rewards, terminated, truncated)),
        gamma=gamma,
        lam=lam,
    )
    np.testing.assert_allclose(got.values.numpy() - values, gae, rtol=1e-12, atol=1e-12)


def test_nothing_flows_back_across_an_episode_end():
    T, N = 4, 1
    zeros = torch.zeros(T, N, dtype=torch.float64)
    rewards = torch.tensor([[0.0], [0.0], [0.0], [100.0]], dtype=torch.float64)
    ended = torch.tensor([[False], [True], [False], [False]])
    for terminated, truncated in (
        (ended, torch.zeros_like(ended)),
        (torch.zeros_like(ended), ended),
    ):
        got = vtrace(zeros, zeros, zeros, rewards, terminated, truncated, gamma=0.9)
        assert got.values[:2].abs().max() == 0  # the reward after the end is not theirs
        assert got.values[2, 0] == pytest.approx(90.0)


def test_rho_bar_below_c_bar_is_refused():
    x = torch.zeros(2, 1)
    flags = torch.zeros(2, 1, dtype=torch.bool)
    with pytest.raises(ValueError, match="rho_bar >= c_bar"):
        vtrace(x, x, x, x, flags, flags, gamma=0.9, rho_bar=0.5, c_bar=1.0)
