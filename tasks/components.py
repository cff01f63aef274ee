"""Vector and quaternion algebra on component tuples, with constants folded while tracing.

A vector is a tuple ``(x, y, z)`` and a quaternion a tuple ``(w, x, y, z)`` (MuJoCo's order).
Each component is a JAX array of one batch shape (N,), or a Python float where the value is
known when tracing. Terms that a zero or unit constant makes void are dropped, so a chain of
constant offsets and axis-aligned joints traces to only the arithmetic that remains. Each
component of a result is its own elementwise expression, which XLA's CPU loop emitter handles
better than (N, 4) arrays sliced and stacked by component: those become per-element select
chains (FrankaCabinet site poses at 1024 envs, both in one process: 0.13 ms as (N, 4)/(N, 3)
arrays, 0.07 ms as components with :func:`sincos`).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

Component = jax.Array | float
Vec = tuple[Component, Component, Component]
Quat = tuple[Component, Component, Component, Component]

ZERO: Vec = (0.0, 0.0, 0.0)
IDENTITY: Quat = (1.0, 0.0, 0.0, 0.0)


def _known(x: Component) -> bool:
    return isinstance(x, float)


def constant(values: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    """A constant vector or quaternion as a component tuple."""
    return tuple(float(v) for v in np.asarray(values, np.float64))


def product(a: Component, b: Component) -> Component:
    """a * b, folded where either is a zero, unit or known constant."""
    if _known(a) and _known(b):
        return a * b
    if _known(b):
        a, b = b, a
    if _known(a):
        if a == 0.0:
            return 0.0
        if a == 1.0:
            return b
        if a == -1.0:
            return -b
    return a * b


def total(*terms: Component) -> Component:
    """Sum of ``terms``, its known constants added once and a zero constant left out."""
    known = sum(t for t in terms if _known(t))
    arrays = [t for t in terms if not _known(t)]
    if not arrays:
        return float(known)
    out = arrays[0]
    for t in arrays[1:]:
        out = out + t
    return out + known if known != 0.0 else out


def add(a: Vec, b: Vec) -> Vec:
    return tuple(total(x, y) for x, y in zip(a, b, strict=True))


def dot(a: Vec, b: Vec) -> Component:
    """a . b as a sum of products (no reduction over a small trailing axis)."""
    return total(*(product(x, y) for x, y in zip(a, b, strict=True)))


def scaled(v: Vec, s: Component) -> Vec:
    return tuple(product(x, s) for x in v)


def cross(a: Vec, b: Vec) -> Vec:
    return (
        total(product(a[1], b[2]), product(-1.0, product(a[2], b[1]))),
        total(product(a[2], b[0]), product(-1.0, product(a[0], b[2]))),
        total(product(a[0], b[1]), product(-1.0, product(a[1], b[0]))),
    )


def rotate(q: Quat, v: Vec) -> Vec:
    """v rotated by the unit quaternion q: v + w t + u x t, t = 2 u x v, (w, u) = q."""
    u = q[1:]
    t = scaled(cross(u, v), 2.0)
    return add(add(v, scaled(t, q[0])), cross(u, t))


def multiply(a: Quat, b: Quat) -> Quat:
    """Hamilton product a * b."""
    aw, ax, ay, az = a
    bw, bx, by, bz = b
    p, m = product, lambda x, y: product(-1.0, product(x, y))
    return (
        total(p(aw, bw), m(ax, bx), m(ay, by), m(az, bz)),
        total(p(aw, bx), p(ax, bw), p(ay, bz), m(az, by)),
        total(p(aw, by), m(ax, bz), p(ay, bw), p(az, bx)),
        total(p(aw, bz), p(ax, by), m(ay, bx), p(az, bw)),
    )


# pi / 2 split in two: the first has 9 significant bits, so k * _HALF_PI_HI is exact in float32
# for |k| < 2**15
_HALF_PI_HI = 1.5703125
_HALF_PI_LO = float(np.pi / 2 - 1.5703125)


def sincos(x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """(sin x, cos x), elementwise, within 2e-7 in float32 for |x| < 1e4.

    x is reduced to r in [-pi/4, pi/4] about the nearest multiple k pi/2; there Taylor
    polynomials to r^9 (sin) and r^8 (cos) are exact to float32 rounding, and k mod 4 picks
    the signs and the swap. XLA's CPU ``sin``/``cos`` take ~7 ns per element (scalar calls);
    these are a few fused multiply-adds.
    """
    k = jnp.round(x * (2.0 / np.pi))
    r = (x - k * _HALF_PI_HI) - k * _HALF_PI_LO
    r2 = r * r
    sin = r + r * r2 * (-1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880))))
    cos = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320))))
    quadrant = k.astype(jnp.int32) & 3
    swap = (quadrant & 1) == 1
    sin, cos = jnp.where(swap, cos, sin), jnp.where(swap, sin, cos)
    sin = jnp.where(quadrant >= 2, -sin, sin)
    cos = jnp.where((quadrant == 1) | (quadrant == 2), -cos, cos)
    return sin, cos


def barrier(*groups: tuple[Component, ...]) -> tuple[tuple[Component, ...], ...]:
    """``groups`` with their array components computed once, in one kernel, as rows of one
    (m, N) array behind an ``optimization_barrier``. Without the stacking, XLA's CPU fusion
    sees through the barrier and recomputes every component in each of its consumers."""
    arrays = [c for g in groups for c in g if not _known(c)]
    if not arrays:
        return groups
    rows = iter(jax.lax.optimization_barrier(jnp.stack(arrays)))
    return tuple(tuple(c if _known(c) else next(rows) for c in g) for g in groups)


def stacked(items: Sequence[tuple[Component, ...]], n: int, dtype) -> jax.Array:
    """Tuples of k components as one (n, len(items), k) array."""
    full = [
        [jnp.full((n,), c, dtype) if _known(c) else c.astype(dtype) for c in item] for item in items
    ]
    return jnp.stack([jnp.stack(item, axis=-1) for item in full], axis=1)
