"""Host-side episode counters (mujoco backend) against a plain per-env reference."""

from __future__ import annotations

import numpy as np

from isaacgymenvs_gmi.sim.host_episodes import HostEpisodes

N, LIMIT, STEPS = 6, 4, 40


def test_counters_follow_a_per_env_reference():
    rng = np.random.default_rng(0)
    episodes = HostEpisodes(N, LIMIT)
    progress, ret = [0] * N, [np.float32(0.0)] * N
    finished_returns, finished_lengths = [], []
    for _ in range(STEPS):
        reward = rng.normal(size=N).astype(np.float32)
        terminated = rng.random(N) < 0.15
        obs = rng.normal(size=(N, 3)).astype(np.float32)
        out, done_rows = episodes.advance(obs, reward, terminated)
        timeout = out.timeout

        assert out.obs is obs
        np.testing.assert_array_equal(out.reward, reward)
        for i in range(N):
            progress[i] += 1
            ret[i] = np.float32(ret[i] + reward[i])
            assert timeout[i] == (progress[i] >= LIMIT)
            done = bool(terminated[i] or timeout[i])
            assert out.reset[i] == done and out.timeout[i] == timeout[i]
            assert out.episode_length[i] == (progress[i] if done else 0)
            assert out.episode_return[i] == (ret[i] if done else 0.0)
            if done:
                finished_returns.append(ret[i])
                finished_lengths.append(progress[i])
                progress[i], ret[i] = 0, np.float32(0.0)
        np.testing.assert_array_equal(done_rows, np.flatnonzero(out.reset))
        np.testing.assert_array_equal(episodes.progress, progress)
        np.testing.assert_array_equal(episodes.episode_return, ret)
    assert len(finished_lengths) > N  # episodes ended by both rules
    total_return, total_length, count = episodes.totals
    assert count == len(finished_lengths)
    assert total_length == sum(finished_lengths)
    assert np.isclose(total_return, sum(map(float, finished_returns)), rtol=1e-6)


def test_no_episode_outlives_the_limit():
    episodes = HostEpisodes(2, LIMIT)
    never = np.zeros(2, bool)
    lengths = []
    for _ in range(3 * LIMIT):
        out, _ = episodes.advance(np.zeros((2, 1)), np.ones(2, np.float32), never)
        lengths.append(out.episode_length.copy())
    ended = np.flatnonzero(np.asarray(lengths)[:, 0])
    np.testing.assert_array_equal(ended, [LIMIT - 1, 2 * LIMIT - 1, 3 * LIMIT - 1])
    np.testing.assert_array_equal(np.asarray(lengths)[ended], LIMIT)
