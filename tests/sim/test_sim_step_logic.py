"""Episode bookkeeping shared by both backends: time-outs, terminations, auto-reset, seeds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask

N = 4
START_HEIGHT = np.float32(0.44)


@pytest.fixture(params=["mujoco", "mjx"])
def backend_name(request):
    return request.param


def test_ant_time_out_after_episode_length(shared_env, restart_env, step_env, backend_name):
    """Upstream's rule: an episode ends when progress (after the step) >= episodeLength - 1, so
    episodeLength 6 gives episodes of 5 steps."""
    env = shared_env("Ant", backend_name, episodeLength=6)
    assert env.max_episode_length == 6 and env.task.timeout_steps == 5
    first_obs = restart_env(env)
    first_dofs = env.backend.physics_state()[0][:, 7:].copy()
    zeros = np.zeros((N, 8), np.float32)

    for _episode in range(2):
        rewards, prev_obs = [], None
        for k in range(1, 6):
            obs, rew, reset, extras = step_env(env, zeros)
            obs = obs["obs"].numpy()
            rewards.append(rew.numpy().astype(np.float64))
            # standing and facing the target: ~0.5 alive + 0.1 up + 0.5 heading, no death cost
            assert (rew > 0.5).all() and (rew < 2.0).all()
            if k < 5:
                assert not reset.any() and not extras["time_outs"].any()
                assert (extras["episode_length"] == 0).all()
                assert (extras["episode_return"] == 0).all()
                assert (env.progress_buf == k).all()
                prev_obs = obs
                continue
            # step 5 ends every episode by time-out
            assert (reset == 1).all()
            assert extras["time_outs"].all()
            assert (extras["episode_length"] == 5).all()
            np.testing.assert_allclose(
                extras["episode_return"].numpy(), np.sum(rewards, axis=0), rtol=1e-5
            )
            assert (env.progress_buf == 0).all()
            # the returned obs is the first of a new episode
            np.testing.assert_array_equal(obs[:, 0], START_HEIGHT)  # torso at its start height
            assert (np.abs(prev_obs[:, 0] - START_HEIGHT) > 1e-3).all()  # it had moved before
            np.testing.assert_array_equal(obs[:, 28:52], 0.0)  # no sensor readings yet
            np.testing.assert_array_equal(obs[:, 52:60], 0.0)  # no previous actions
            # ... and it describes the state loaded into the physics
            qpos, qvel = env.backend.physics_state()
            np.testing.assert_allclose(qpos[:, :7], [[0, 0, 0.44, 1, 0, 0, 0]] * N, atol=1e-7)
            np.testing.assert_array_equal(qvel[:, :6], 0.0)
            lo, hi = np.asarray(env.task.dof_lower), np.asarray(env.task.dof_upper)
            np.testing.assert_allclose(
                obs[:, 12:20], (2 * qpos[:, 7:] - hi - lo) / (hi - lo), atol=1e-5
            )
            np.testing.assert_allclose(obs[:, 20:28], 0.2 * qvel[:, 6:], atol=1e-6)
            # a fresh random draw, not the episode's first state again
            assert np.abs(qpos[:, 7:] - first_dofs).max() > 1e-3
            assert not torch.equal(torch.from_numpy(obs), first_obs)
    mean_return, mean_length = env.episode_totals()
    assert mean_length == 5.0 and 2.5 < mean_return < 10.0


def test_cartpole_termination(shared_env, restart_env, step_env, backend_name):
    env = shared_env("Cartpole", backend_name)
    assert env.max_episode_length == 500
    restart_env(env)
    rewards = [step_env(env, np.zeros((N, 1)))[1].numpy() for _ in range(3)]
    qpos = np.array([[0.0, 1.5], [2.95, 0.0], [-2.95, 0.0], [0.0, 0.0]])
    qvel = np.array([[0.0, 5.0], [5.0, 0.0], [-5.0, 0.0], [0.0, 0.0]])
    # env 0: pole falling past pi/2; envs 1, 2: cart leaving +-3; env 3: balanced at rest
    env.backend.set_physics_state(qpos, qvel)
    obs, rew, reset, extras = step_env(env, np.zeros((N, 1)))
    rewards.append(rew.numpy())
    np.testing.assert_array_equal(reset.numpy(), [1, 1, 1, 0])
    np.testing.assert_array_equal(rew[:3].numpy(), [-2.0, -2.0, -2.0])
    assert float(rew[3]) == pytest.approx(1.0, abs=1e-6)
    assert not extras["time_outs"].any()
    np.testing.assert_array_equal(extras["episode_length"].numpy(), [4, 4, 4, 0])
    expected_return = np.sum(rewards, axis=0)[:3]
    np.testing.assert_allclose(extras["episode_return"][:3].numpy(), expected_return, rtol=1e-6)
    assert (extras["episode_return"][:3] < -2.0 + 3.0).all()  # 3 steps of <= 1, then -2
    assert float(extras["episode_return"][3]) == 0.0
    np.testing.assert_array_equal(env.progress_buf.numpy(), [0, 0, 0, 4])
    # the ended envs restarted: small random state, matching the physics
    o = obs["obs"].numpy()
    q, v = env.backend.physics_state()
    assert np.abs(o[:3, [0, 2]]).max() <= 0.1 and np.abs(o[:3, [1, 3]]).max() <= 0.25
    np.testing.assert_allclose(
        o[:3], np.stack([q[:3, 0], v[:3, 0], q[:3, 1], v[:3, 1]], -1), atol=1e-6
    )


def _cartpole(task_cfg, seed, **physics):
    physics = PhysicsOptions(backend="mujoco", **{"num_threads": 1, **physics})
    return VecTask(task_cfg("Cartpole"), "cpu", "cpu", physics=physics, seed=seed)


def _trajectory(env, steps=30):
    rng = np.random.default_rng(123)
    out = [env.reset()["obs"].clone()]
    for _ in range(steps):
        actions = torch.from_numpy(rng.normal(0.0, 0.3, (N, env.num_actions)).astype(np.float32))
        obs, rew, reset, _ = env.step(actions)
        out += [obs["obs"].clone(), rew.clone(), reset.clone().float()]
    return out


def test_seeds(task_cfg):
    a, b, c = (_cartpole(task_cfg, seed) for seed in (0, 0, 1))
    ta, tb, tc = _trajectory(a), _trajectory(b), _trajectory(c)
    # 30 steps of random pushes topple poles: resets (drawn from the seed) happen on the way
    assert sum(float(t.sum()) for t in ta[3::3]) >= 2
    for x, y in zip(ta, tb, strict=True):
        assert torch.equal(x, y)
    # another seed: other reset states
    assert not torch.equal(ta[0], tc[0])
    assert (ta[0] - tc[0]).abs().max() > 1e-3
    for env in (a, b, c):
        env.close()


def test_mujoco_threads_do_not_change_results(task_cfg, shared_env, restart_env):
    one = shared_env("Ant", "mujoco")
    physics = PhysicsOptions(backend="mujoco", num_threads=2)
    two = VecTask(task_cfg("Ant"), "cpu", "cpu", physics=physics, seed=0)
    restart_env(one)
    rng = np.random.default_rng(5)
    for _ in range(10):
        actions = torch.from_numpy(rng.normal(0.0, 0.5, (N, 8)).astype(np.float32))
        o1, r1, _, _ = one.step(actions)
        o2, r2, _, _ = two.step(actions)
        assert torch.equal(o1["obs"], o2["obs"]) and torch.equal(r1, r2)
    two.close()
