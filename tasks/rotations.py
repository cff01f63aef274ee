"""Quaternion helpers in JAX, MuJoCo convention: q = (w, x, y, z), batched over leading axes."""

import jax.numpy as jnp


def _rotate(q, v, sign):
    """v + sign w t + u x t with t = 2 u x v, (w, u) = q: the rotation by q (sign 1) or its
    inverse (sign -1), written out by component. With ``jnp.cross`` every cross product became
    an XLA CPU kernel of its own (34 of the 61 kernels of the FrankaCabinet step)."""
    w, x, y, z = q[..., 0], q[..., 1], q[..., 2], q[..., 3]
    vx, vy, vz = v[..., 0], v[..., 1], v[..., 2]
    tx, ty, tz = 2.0 * (y * vz - z * vy), 2.0 * (z * vx - x * vz), 2.0 * (x * vy - y * vx)
    sw = sign * w
    return jnp.stack(
        [
            vx + sw * tx + (y * tz - z * ty),
            vy + sw * ty + (z * tx - x * tz),
            vz + sw * tz + (x * ty - y * tx),
        ],
        axis=-1,
    )


def rotate(q, v):
    """Rotate vectors v (..., 3) by unit quaternions q (..., 4)."""
    return _rotate(q, v, 1.0)


def rotate_inverse(q, v):
    """Rotate vectors v (..., 3) by the inverse of unit quaternions q (..., 4)."""
    return _rotate(q, v, -1.0)


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
    aw, ax, ay, az = a[..., 0], a[..., 1], a[..., 2], a[..., 3]
    bw, bx, by, bz = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
    return jnp.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def conjugate(q):
    """Inverse rotations of unit quaternions q (..., 4)."""
    return q * jnp.array([1.0, -1.0, -1.0, -1.0], dtype=q.dtype)


def from_axis_angle(axis, angle):
    """Quaternions (..., 4) rotating by ``angle`` (...) about unit ``axis`` (3,) or (..., 3)."""
    half = 0.5 * angle
    return jnp.concatenate([jnp.cos(half)[..., None], jnp.sin(half)[..., None] * axis], axis=-1)
