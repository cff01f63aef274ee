"""The pool of fresh episodes: every reset gets a new, never reused sample, refills included,
and both backends hand out the same episodes for the same seed."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.sim.step_logic import POOL_FACTOR
from tests.env_fixtures import NUM_ENVS

STEPS = 300


def _first_observations(env, restart_env) -> np.ndarray:
    """First observations of all episodes started in STEPS steps of hard random pushes."""
    restart_env(env)
    gen = torch.Generator().manual_seed(3)
    firsts = [env.obs_buf.clone()]  # the episodes started by the restart
    for _ in range(STEPS):
        obs, _, reset, _ = env.step(torch.randn((env.num_envs, 1), generator=gen))
        firsts.append(obs["obs"][reset.bool()].clone())
    return torch.cat(firsts).numpy()


def test_fresh_episodes_are_never_reused_across_refills(shared_env, restart_env):
    env = shared_env("Cartpole", "mujoco")
    firsts = _first_observations(env, restart_env)
    pool = POOL_FACTOR * env.num_envs
    assert len(firsts) > 3 * pool, "the run must drain and refill the pool several times"
    assert len(np.unique(firsts.round(7), axis=0)) == len(firsts)
    # fresh Cartpole states: positions in [-0.1, 0.1], velocities in [-0.25, 0.25]
    assert np.abs(firsts[:, [0, 2]]).max() <= 0.1 and np.abs(firsts[:, [1, 3]]).max() <= 0.25


@pytest.mark.parametrize("backend", ["mujoco", "mjx"])
def test_reset_worlds_hold_the_state_of_their_first_observation(shared_env, restart_env, backend):
    """A finished world continues from the very episode whose first observation it returned
    (the mujoco backend loads those states from a host copy of the pool)."""
    env = shared_env("Cartpole", backend)
    restart_env(env)
    gen = torch.Generator().manual_seed(5)
    checked = 0
    for _ in range(120):
        obs, _, reset, _ = env.step(torch.randn((env.num_envs, 1), generator=gen))
        done = reset.bool().numpy()
        qpos, qvel = (np.asarray(x, np.float64) for x in env.backend.physics_state())
        state = np.stack([qpos[:, 0], qvel[:, 0], qpos[:, 1], qvel[:, 1]], axis=1)  # obs layout
        np.testing.assert_allclose(obs["obs"].numpy()[done], state[done], atol=1e-6)
        checked += int(done.sum())
    assert checked > POOL_FACTOR * env.num_envs, "the run must drain and refill the pool"


def test_both_backends_hand_out_the_same_episodes(shared_env, restart_env):
    """Bit for bit, through several pools: the MJX step turns to its next pool on the device
    where the MuJoCo backend swaps its pool on the host."""
    c = _first_observations(shared_env("Cartpole", "mujoco"), restart_env)
    x = _first_observations(shared_env("Cartpole", "mjx"), restart_env)
    assert len(c) > 3 * POOL_FACTOR * NUM_ENVS  # several pools
    np.testing.assert_array_equal(c, x)


def test_the_mjx_step_never_waits_for_what_it_just_computed(shared_env, restart_env, monkeypatch):
    """No host sync in the env step: the step turns to the next pool on the device, and the
    host reads the count of pools used up only from the step before the previous one, so the
    CPU can run a step ahead of the device. Reading a fresh device value (``int(x)``, numpy
    conversion) is refused here; every explicit read is checked for its age."""
    import jax
    import jax.numpy as jnp

    env = shared_env("Cartpole", "mjx")
    restart_env(env)
    backend, now = env.backend, [0]
    made: dict[int, int] = {}  # id of a step's pool count -> the step that made it
    real_step, real_get = backend._fused_step, jax.device_get

    def recording_step(*args):
        outs = real_step(*args)
        made[id(outs[-1])] = now[0]
        return outs

    reads: list[int] = []  # age in steps of each value read
    reading = [False]

    def recording_get(x):
        reads.append(now[0] - made[id(x)])
        reading[0] = True
        try:
            return real_get(x)
        finally:
            reading[0] = False

    def refusing(name):
        original = getattr(array_type, name)

        def conversion(self, *args, **kwargs):
            assert reading[0], f"the env step waited for a device value ({name})"
            return original(self, *args, **kwargs)

        return conversion

    array_type = type(jnp.zeros(()))  # jax's concrete array class
    gen = np.random.default_rng(4)
    actions = [
        jnp.asarray(gen.normal(size=(env.num_envs, 1)) * 3, jnp.float32) for _ in range(STEPS)
    ]
    with monkeypatch.context() as m:
        m.setattr(backend, "_fused_step", recording_step)
        m.setattr(jax, "device_get", recording_get)
        for name in ("__int__", "__index__", "__bool__", "__float__", "__array__"):
            m.setattr(array_type, name, refusing(name))
        for now[0], a in enumerate(actions):
            backend.step(a)
    assert int(backend._bufs.pool.switches) >= 3, "the run must use up several pools"
    assert reads and min(reads) >= 2
