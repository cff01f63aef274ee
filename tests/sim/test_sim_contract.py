"""IsaacGymEnvs' VecTask contract, for every task on every physics backend (CPU, 4 envs)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

# num_obs, num_actions, max_episode_length (every episode times out after it - 1 steps)
TASKS = {"Cartpole": (4, 1, 500), "Ant": (60, 8, 1000), "Humanoid": (108, 21, 1000)}
TASKS |= {"Anymal": (48, 12, 2500), "BallBalance": (24, 3, 500)}
TASKS |= {"FrankaCabinet": (23, 9, 500), "ShadowHand": (211, 20, 600)}
CASES = [(task, backend) for task in TASKS for backend in ("mujoco", "mjx")]
CASES += [("Cartpole", "make()"), ("Ant", "make()")]  # isaacgymenvs_gmi.make's env, same contract
N = 4


@pytest.fixture(scope="module", params=CASES, ids=[f"{t}-{b}" for t, b in CASES])
def env(request, shared_env):
    task, backend = request.param
    if backend != "make()":
        yield shared_env(task, backend)
        return
    import isaacgymenvs_gmi

    made = isaacgymenvs_gmi.make(0, task, N, "cpu", "cpu", headless=True)
    yield made
    made.close()


def _random_actions(env, seed: int, scale: float = 0.5) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.normal(0.0, scale, (N, env.num_actions)).astype(np.float32))


def test_sizes_and_spaces(env):
    num_obs, num_actions, episode_length = TASKS[env.task.name]
    assert env.num_envs == N
    assert env.max_episode_length == episode_length
    assert env.num_obs == num_obs
    assert env.num_actions == num_actions
    assert env.num_acts == num_actions
    assert env.num_states == 0
    assert env.observation_space.shape == (num_obs,)
    assert env.action_space.shape == (num_actions,)
    np.testing.assert_array_equal(env.action_space.low, -np.ones(num_actions))
    np.testing.assert_array_equal(env.action_space.high, np.ones(num_actions))
    assert env.physics_options.backend == env.backend.name


def test_reset_returns_obs_only(env, restart_env):
    first = restart_env(env)
    obs_dict = env.reset()
    assert set(obs_dict) == {"obs"}
    obs = obs_dict["obs"]
    assert obs.shape == (N, env.num_obs)
    assert obs.dtype == torch.float32
    assert obs.device == torch.device(env.rl_device) == torch.device("cpu")
    torch.testing.assert_close(obs, first, rtol=0, atol=0)
    assert torch.isfinite(obs).all()
    assert (env.progress_buf == 0).all()


def test_step_outputs_and_buffers(env, restart_env):
    restart_env(env)
    previous = None
    for k in range(3):
        obs_dict, rew, reset, extras = env.step(_random_actions(env, k))
        if previous is not None:  # a step hands out fresh tensors: the last ones are unchanged
            for held, copy in previous:
                torch.testing.assert_close(held, copy, rtol=0, atol=0)
        assert set(obs_dict) == {"obs"}
        obs = obs_dict["obs"]
        assert obs.shape == (N, env.num_obs) and obs.dtype == torch.float32
        assert rew.shape == (N,) and rew.dtype == torch.float32
        assert reset.shape == (N,) and reset.dtype == torch.int64
        assert set(extras) >= {"time_outs", "episode_return", "episode_length"}
        assert extras["time_outs"].shape == (N,) and extras["time_outs"].dtype == torch.bool
        assert extras["episode_return"].shape == (N,)
        assert extras["episode_length"].shape == (N,)
        for t in (obs, rew, reset, *extras.values()):
            assert t.device == torch.device("cpu")
        # buffers are what step returned
        assert env.obs_buf is obs and env.rew_buf is rew and env.reset_buf is reset
        assert env.timeout_buf is extras["time_outs"]
        assert env.obs_buf.shape == (N, env.num_obs)
        assert env.progress_buf.shape == (N,)
        assert env.reset().get("obs") is obs
        assert torch.isfinite(obs).all() and torch.isfinite(rew).all()
        assert obs.abs().max() <= env.clip_obs  # clipObservations (inf where a task sets none)
        # nothing ended this early: counters advance, no episode statistics
        assert (reset == 0).all() and not extras["time_outs"].any()
        assert (extras["episode_length"] == 0).all() and (extras["episode_return"] == 0).all()
        assert (env.progress_buf == k + 1).all()
        previous = [(t, t.clone()) for t in (obs, rew, reset, *extras.values())]


def test_actions_beyond_clip_behave_as_clipped(env, restart_env, step_env):
    """Actions x10 from a given state give exactly what their clipped values give."""
    assert env.clip_actions == 1.0
    restart_env(env)
    qpos, qvel = env.backend.physics_state()
    rng = np.random.default_rng(7)
    wild = rng.uniform(-1.0, 1.0, (N, env.num_actions)).astype(np.float32) * 10.0
    wild[0] = 10.0  # every component beyond the limit in env 0
    clipped = np.clip(wild, -1.0, 1.0)
    assert np.abs(wild).max() > 5.0

    def from_state(actions):  # two steps: an integrated position target acts a step late
        restart_env(env)
        env.backend.set_physics_state(qpos, qvel)
        step_env(env, actions)
        return step_env(env, actions)

    obs_w, rew_w, _, _ = from_state(wild)
    obs_c, rew_c, _, _ = from_state(clipped)
    obs_h, _, _, _ = from_state(0.5 * clipped)
    torch.testing.assert_close(obs_w["obs"], obs_c["obs"], rtol=0, atol=0)
    torch.testing.assert_close(rew_w, rew_c, rtol=0, atol=0)
    # the actions do matter: half of them lead somewhere else
    assert (obs_h["obs"] - obs_c["obs"]).abs().max() > 1e-3
    if env.task.name == "Ant":  # the obs carries the clipped actions
        np.testing.assert_array_equal(obs_w["obs"][:, 52:60].numpy(), clipped)


def test_cartpole_observations_clipped(shared_env, restart_env, step_env, backend_name):
    env = shared_env("Cartpole", backend_name)
    assert env.clip_obs == 5.0
    restart_env(env)
    # env 0: cart at 20 m/s and pole spinning at -30 rad/s, both beyond the clip of 5
    qpos = np.zeros((N, 2))
    qvel = np.zeros((N, 2))
    qvel[0] = [20.0, -30.0]
    env.backend.set_physics_state(qpos, qvel)
    obs, rew, reset, _ = step_env(env, np.zeros((N, 1)))
    assert not reset.any()
    obs = obs["obs"].numpy()
    assert obs[0, 1] == 5.0 and obs[0, 3] == -5.0
    assert np.abs(obs).max() <= 5.0
    # the reward is computed from the unclipped state:
    #   1 - angle^2 - 0.01 |cart vel| - 0.005 |pole vel| with |cart vel| ~ 20, |pole vel| ~ 30
    q, v = env.backend.physics_state()
    assert abs(v[0, 0]) > 19.0 and abs(v[0, 1]) > 25.0
    expected = 1.0 - q[0, 1] ** 2 - 0.01 * abs(v[0, 0]) - 0.005 * abs(v[0, 1])
    assert float(rew[0]) == pytest.approx(expected, abs=1e-4)
    clipped_reward = 1.0 - q[0, 1] ** 2 - 0.01 * 5.0 - 0.005 * 5.0
    assert abs(float(rew[0]) - clipped_reward) > 0.1
    # env 1 at rest stays at rest: reward 1
    assert float(rew[1]) == pytest.approx(1.0, abs=1e-6)


def test_ant_observations_not_clipped(shared_env):
    env = shared_env("Ant", "mujoco")
    assert math.isinf(env.clip_obs)  # Ant.yaml sets no clipObservations


@pytest.fixture(params=["mujoco", "mjx"])
def backend_name(request):
    return request.param
