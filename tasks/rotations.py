"""Quaternion helpers in JAX, MuJoCo convention: q = (w, x, y, z), batched over leading axes."""

import jax.numpy as jnp

from . import components as C


def _parts(x):
    """Components of (..., k) as a tuple of k arrays (...)."""
    return tuple(x[..., i] for i in range(x.shape[-1]))


def rotate(q, v):
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4). Written out by component
    (:mod:`.components`): with ``jnp.cross`` every cross product became an XLA CPU kernel of its
    own (34 of the 61 kernels of the FrankaCabinet step)."""
    return jnp.stack(C.rotate(_parts(q), _parts(v)), axis=-1)


def rotate_inverse(q, v):
    """Rotate vectors v (..., 3) by the inverse of unit quaternions q (..., 4)."""
    w, x, y, z = _parts(q)
    return jnp.stack(C.rotate((w, -x, -y, -z), _parts(v)), axis=-1)


def euler_xyz(q):
    """(roll, pitch, yaw) of q (..., 4), each wrapped to [0, 2*pi) as in Isaac Gym's helpers."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    roll = jnp.arctan2(2.0 * (w * x + y * z), w * w - x * x - y * y + z * z)
    sinp = 2.0 * (w * y - z * x)
    pitch = jnp.where(jnp.abs(sinp) >= 1.0, jnp.sign(sinp) * jnp.pi / 2, jnp.arcsin(sinp))
    yaw = jnp.arctan2(2.0 * (w * z + x * y), w * w + x * x - y * y - z * z)
    two_pi = 2.0 * jnp.pi
    return roll % two_pi, pitch % two_pi, yaw % two_pi


def multiply(a, b):
    """Hamilton products a * b of quaternions (..., 4)."""
    return jnp.stack(C.multiply(_parts(a), _parts(b)), axis=-1)


def conjugate(q):
    """Inverse rotations of unit quaternions q (..., 4)."""
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def from_axis_angle(axis, angle):
    """Quaternions (..., 4) rotating by ``angle`` (...) about unit ``axis`` (3,) or (..., 3)."""
    sin, cos = C.sincos(0.5 * jnp.asarray(angle))
    return jnp.concatenate([cos[..., None], sin[..., None] * axis], axis=-1)
