"""Component-tuple algebra (tasks/components.py): folding of known constants, agreement with the
array quaternion helpers and MuJoCo, and the polynomial sin/cos against numpy's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from isaacgymenvs_gmi.tasks import components as C
from isaacgymenvs_gmi.tasks import rotations


def test_constants_fold_while_tracing():
    x = jnp.arange(3.0)
    assert C.product(0.0, x) == 0.0 and isinstance(C.product(x, 0.0), float)
    assert C.product(1.0, x) is x and C.product(x, 1.0) is x
    np.testing.assert_array_equal(C.product(-1.0, x), -x)
    assert C.product(2.0, 3.0) == 6.0
    assert C.total(1.0, 0.5) == 1.5 and isinstance(C.total(0.0, 0.0), float)
    assert C.total(x, 0.0) is x
    np.testing.assert_array_equal(C.total(x, 2.0, x), 2 * x + 2.0)
    # the identity rotation leaves a vector's components untouched, arrays and floats alike
    assert C.rotate(C.IDENTITY, (x, 0.0, 2.0)) == (x, 0.0, 2.0)
    # a turn about z keeps the z component a known zero
    turn = (jnp.cos(x), 0.0, 0.0, jnp.sin(x))
    assert C.rotate(turn, (1.0, 0.0, 0.0))[2] == 0.0
    assert C.multiply(turn, C.IDENTITY)[1:3] == (0.0, 0.0)


def test_algebra_matches_the_array_helpers_and_mujoco():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    r = rng.normal(size=(5, 4))
    r /= np.linalg.norm(r, axis=1, keepdims=True)
    v = rng.normal(size=(5, 3))
    # mix arrays and known constants: q's x component and v's y component are constants
    q_mixed = (jnp.asarray(q[:, 0]), 0.3, jnp.asarray(q[:, 2]), jnp.asarray(q[:, 3]))
    q_full = np.stack([q[:, 0], np.full(5, 0.3), q[:, 2], q[:, 3]], axis=1)
    v_mixed = (jnp.asarray(v[:, 0]), -0.7, jnp.asarray(v[:, 2]))
    v_full = np.stack([v[:, 0], np.full(5, -0.7), v[:, 2]], axis=1)
    r_parts = tuple(jnp.asarray(r[:, k]) for k in range(4))
    rotated = C.stacked([C.rotate(q_mixed, v_mixed)], 5, jnp.float32)[:, 0]
    product = C.stacked([C.multiply(q_mixed, r_parts)], 5, jnp.float32)[:, 0]
    # q_full is not unit: the rotation formula is the same one rotations.rotate uses
    np.testing.assert_allclose(rotated, rotations.rotate(q_full, v_full), atol=1e-6)
    np.testing.assert_allclose(product, rotations.multiply(q_full, r), atol=1e-6)
    expected = np.empty(4)
    mujoco.mju_mulQuat(expected, q[0], r[0])
    parts = tuple(jnp.asarray(q[:1, k]) for k in range(4))
    np.testing.assert_allclose(
        C.stacked([C.multiply(parts, r_parts)], 5, jnp.float32)[0, 0], expected, atol=1e-6
    )


def test_barrier_keeps_constants_and_stacked_fills_them():
    def traced(x):
        pos, quat = C.barrier((x, 0.5, x * 2), (1.0, 0.0, 0.0, x))
        # known components stay Python floats while tracing; arrays go through the barrier
        assert pos[1] == 0.5 and quat[:3] == (1.0, 0.0, 0.0)
        return C.stacked([pos, (x, x, x)], 4, jnp.float32)

    x = jnp.arange(4.0)
    out = jax.jit(traced)(x)
    assert out.shape == (4, 2, 3) and out.dtype == jnp.float32
    np.testing.assert_array_equal(out[:, 0], np.stack([x, np.full(4, 0.5), 2 * x], axis=1))
    np.testing.assert_array_equal(out[:, 1], np.stack([x, x, x], axis=1))
    assert C.barrier((1.0, 2.0)) == ((1.0, 2.0),)


@pytest.mark.parametrize("scale", [1.0, 50.0, 1e4])
def test_sincos_matches_numpy_in_float32(scale):
    x = np.linspace(-scale, scale, 400_001).astype(np.float32)
    x[:4] = [0.0, np.pi / 4, np.pi / 2, -np.pi]  # quadrant edges
    sin, cos = jax.jit(C.sincos)(jnp.asarray(x))
    exact = x.astype(np.float64)
    np.testing.assert_allclose(np.asarray(sin), np.sin(exact), rtol=0, atol=2e-7)
    np.testing.assert_allclose(np.asarray(cos), np.cos(exact), rtol=0, atol=2e-7)
