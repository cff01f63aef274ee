"""Quaternion helpers in JAX, MuJoCo convention: q = (w, x, y, z), batched over leading axes."""

import jax.numpy as jnp


def rotate(q, v):
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * jnp.cross(u, v)
    return v + w * t + jnp.cross(u, t)


def rotate_inverse(q, v):
    """Rotate vectors v (..., 3) by the inverse of unit quaternions q (..., 4)."""
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * jnp.cross(u, v)
    return v - w * t + jnp.cross(u, t)


def euler_xyz(q):
    """(roll, pitch, yaw) of q (..., 4), each wrapped to [0, 2*pi) as in Isaac Gym's helpers."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    roll = jnp.arctan2(2.0 * (w * x + y * z), w * w - x * x - y * y + z * z)
    sinp = 2.0 * (w * y - z * x)
    pitch = jnp.where(jnp.abs(sinp) >= 1.0, jnp.sign(sinp) * jnp.pi / 2, jnp.arcsin(sinp))
    yaw = jnp.arctan2(2.0 * (w * z + x * y), w * w + x * x - y * y - z * z)
    two_pi = 2.0 * jnp.pi
    return roll % two_pi, pitch % two_pi, yaw % two_pi
