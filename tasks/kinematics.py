"""Forward kinematics of a MuJoCo model's body tree, in JAX, for the frames a task observes.

Sensors are read when a physics step starts, so a frame sensor lags the state by a substep and
reads zero in an episode's first observation; positions computed here from ``qpos`` are exact
for any state, including freshly sampled ones. Velocities come from the same function by
forward-mode differentiation along ``qvel``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import mujoco
import numpy as np

from . import components as C
from . import rotations
from .indexing import columns

_FREE, _BALL, _SLIDE, _HINGE = (
    mujoco.mjtJoint.mjJNT_FREE,
    mujoco.mjtJoint.mjJNT_BALL,
    mujoco.mjtJoint.mjJNT_SLIDE,
    mujoco.mjtJoint.mjJNT_HINGE,
)


@dataclass(frozen=True)
class KinematicTree:
    """Body tree of a compiled model (numpy, host side): what ``mj_kinematics`` reads."""

    parent: np.ndarray  # (nbody,) parent body id (0 = world)
    body_pos: np.ndarray  # (nbody, 3) offset in the parent frame
    body_quat: np.ndarray  # (nbody, 4) orientation in the parent frame
    body_joints: tuple[tuple[int, ...], ...]  # joint ids of every body, in order
    jnt_type: np.ndarray  # (njnt,)
    jnt_axis: np.ndarray  # (njnt, 3) in the body frame
    jnt_pos: np.ndarray  # (njnt, 3) anchor in the body frame
    jnt_qposadr: np.ndarray  # (njnt,)
    jnt_dofadr: np.ndarray  # (njnt,)
    nq: int
    bodies: dict[str, int]
    sites: dict[str, tuple[int, np.ndarray, np.ndarray]]  # name -> (body, pos, quat)

    @classmethod
    def from_model(cls, m: mujoco.MjModel) -> KinematicTree:
        def name(kind, i):
            return mujoco.mj_id2name(m, kind, i)

        joints = tuple(
            tuple(range(m.body_jntadr[b], m.body_jntadr[b] + m.body_jntnum[b]))
            for b in range(m.nbody)
        )
        sites = {
            name(mujoco.mjtObj.mjOBJ_SITE, s): (
                int(m.site_bodyid[s]),
                np.array(m.site_pos[s]),
                np.array(m.site_quat[s]),
            )
            for s in range(m.nsite)
            if name(mujoco.mjtObj.mjOBJ_SITE, s)
        }
        bodies = {name(mujoco.mjtObj.mjOBJ_BODY, b): b for b in range(m.nbody)}
        return cls(
            parent=np.array(m.body_parentid),
            body_pos=np.array(m.body_pos),
            body_quat=np.array(m.body_quat),
            body_joints=joints,
            jnt_type=np.array(m.jnt_type),
            jnt_axis=np.array(m.jnt_axis),
            jnt_pos=np.array(m.jnt_pos),
            jnt_qposadr=np.array(m.jnt_qposadr),
            jnt_dofadr=np.array(m.jnt_dofadr),
            nq=m.nq,
            bodies=bodies,
            sites=sites,
        )

    def _ancestors(self, body: int) -> list[int]:
        chain = []
        while body != 0:
            chain.append(body)
            body = int(self.parent[body])
        return chain[::-1]

    def _body_frames(self, qpos: jax.Array, wanted: list[int]) -> dict[int, tuple]:
        """World (position, quaternion) of ``wanted`` bodies and their ancestors, as component
        tuples (:mod:`.components`): arrays (N,), or floats where constant.

        Work that constants make void (zero offsets, identity rotations, axis-aligned joints)
        drops out while tracing, and a hinge at its body's origin is folded into the body's
        rotation: rel * (cos h, sin h axis) = cos h rel + sin h (rel * (0, axis)).
        """

        def column(adr: int) -> jax.Array:
            return qpos[:, adr]

        bodies = sorted({b for w in wanted for b in self._ancestors(w)})
        hinges = [j for b in bodies for j in self.body_joints[b] if self.jnt_type[j] == _HINGE]
        # cos and sin of every half hinge angle in one kernel, rows (2 * hinges, N): the
        # bodies' kernels read them instead of each evaluating them per component
        half = 0.5 * qpos[:, columns(self.jnt_qposadr[hinges])].T
        sin, cos = C.sincos(half)
        trig = jax.lax.optimization_barrier(jnp.concatenate([cos, sin]))
        row = {j: k for k, j in enumerate(hinges)}

        def cos_sin(j: int) -> tuple[jax.Array, jax.Array]:
            return trig[row[j]], trig[len(hinges) + row[j]]

        frames = {0: (C.ZERO, C.IDENTITY)}
        for body in bodies:
            p, q = frames[int(self.parent[body])]
            pos = C.add(p, C.rotate(q, C.constant(self.body_pos[body])))
            rel, joints = C.constant(self.body_quat[body]), ()
            if self._plain_hinge(body):
                j = self.body_joints[body][0]
                rel_axis = C.multiply(rel, (0.0, *C.constant(self.jnt_axis[j])))
                cos, sin = cos_sin(j)
                turn = tuple(
                    C.total(C.product(cos, r), C.product(sin, a))
                    for r, a in zip(rel, rel_axis, strict=True)
                )
                quat = C.multiply(q, turn)
            else:
                quat, joints = C.multiply(q, rel), self.body_joints[body]
            for j in joints:
                adr, kind = int(self.jnt_qposadr[j]), self.jnt_type[j]
                if kind == _FREE:
                    pos = tuple(column(adr + k) for k in range(3))
                    quat = tuple(column(adr + 3 + k) for k in range(4))
                    continue
                if kind == _SLIDE:
                    axis = C.rotate(quat, C.constant(self.jnt_axis[j]))
                    pos = C.add(pos, C.scaled(axis, column(adr)))
                    continue
                anchor = C.constant(self.jnt_pos[j])
                pivot = C.add(pos, C.rotate(quat, anchor))
                if kind == _HINGE:
                    cos, sin = cos_sin(j)
                    turn = (cos, *C.scaled(C.constant(self.jnt_axis[j]), sin))
                else:  # ball
                    turn = tuple(column(adr + k) for k in range(4))
                quat = C.multiply(quat, turn)
                pos = C.add(pivot, C.rotate(quat, tuple(-a for a in anchor)))
            # a barrier per body: without it XLA fuses the whole chain and recomputes each
            # parent's product for every child (seconds per call on a 10-body arm)
            frames[body] = C.barrier(pos, quat)
        return frames

    def _plain_hinge(self, body: int) -> bool:
        """The body moves by one hinge about its own origin."""
        joints = self.body_joints[body]
        return (
            len(joints) == 1
            and self.jnt_type[joints[0]] == _HINGE
            and not np.any(self.jnt_pos[joints[0]])
        )

    def site_frames(self, qpos: jax.Array, names: tuple[str, ...]) -> list[tuple[C.Vec, C.Quat]]:
        """World (position, quaternion) of sites ``names`` at ``qpos`` (N, nq), as component
        tuples (:mod:`.components`): a task that combines them further (dot products,
        distances) stays elementwise, without stacking and reducing over small axes."""
        missing = [s for s in names if s not in self.sites]
        if missing:
            raise KeyError(f"sites {missing} not in the model; it has {sorted(self.sites)}")
        frames = self._body_frames(qpos, [self.sites[s][0] for s in names])
        out = []
        for s in names:
            body, offset, rel = self.sites[s]
            p, q = frames[body]
            out.append((C.add(p, C.rotate(q, C.constant(offset))), C.multiply(q, C.constant(rel))))
        return out

    def site_poses(self, qpos: jax.Array, names: tuple[str, ...]) -> tuple[jax.Array, jax.Array]:
        """World positions (N, k, 3) and quaternions (N, k, 4) of sites ``names`` at ``qpos``."""
        frames = self.site_frames(qpos, names)
        n, dtype = qpos.shape[0], qpos.dtype
        return (
            C.stacked([p for p, _ in frames], n, dtype),
            C.stacked([q for _, q in frames], n, dtype),
        )

    def qpos_velocity(self, qvel: jax.Array) -> jax.Array:
        """``qvel`` (N, nv) as a qpos tangent (N, nq), for trees of hinge and slide joints."""
        hinge_or_slide = (self.jnt_type == _HINGE) | (self.jnt_type == _SLIDE)
        tangent = jnp.zeros((qvel.shape[0], self.nq), qvel.dtype)
        return tangent.at[:, self.jnt_qposadr[hinge_or_slide]].set(
            qvel[:, self.jnt_dofadr[hinge_or_slide]]
        )

    def site_states(
        self, qpos: jax.Array, qvel: jax.Array, names: tuple[str, ...]
    ) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
        """World position (N, k, 3), quaternion (N, k, 4), linear velocity (N, k, 3) and angular
        velocity (N, k, 3) of sites ``names`` on chains of hinge and slide joints."""
        (pos, quat), (dpos, dquat) = jax.jvp(
            lambda q: self.site_poses(q, names), (qpos,), (self.qpos_velocity(qvel),)
        )
        angvel = 2.0 * rotations.multiply(dquat, rotations.conjugate(quat))[..., 1:]
        return pos, quat, dpos, angvel


class HingeChains:
    """World pose and velocity of sites on chains of hinge joints, batched over the chains.

    ``KinematicTree.site_states`` serves any tree, but on deep chains (a Shadow Hand finger: 9
    bodies) it compiles for minutes and runs ~5x slower (1024 envs: 4.5 ms against 0.8 ms).
    Here jointless bodies are folded into constant offsets, the chains are padded to one depth
    and walked together one joint level at a time behind a fusion barrier, with components on
    the leading axis (vectors (3, C, N), quaternions (4, C, N), w first) and velocities
    propagated level by level instead of differentiated.
    """

    def __init__(self, tree: KinematicTree, sites: tuple[str, ...]):
        chains = [_folded_chain(tree, s) for s in sites]
        depth = max(len(c) for c in chains) - 1
        pad = (np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), -1)  # no joint, no offset
        levels = [[pad] * (depth + 1 - len(c)) + c[:-1] for c in chains]  # (C, L)
        joints = np.array([[j for _, _, j in chain] for chain in levels])
        axis, quat_axis = np.zeros(joints.shape + (3,)), np.zeros(joints.shape + (4,))
        for (c, k), j in np.ndenumerate(joints):
            if j >= 0:
                mujoco.mju_rotVecQuat(axis[c, k], tree.jnt_axis[j], levels[c][k][1])
                mujoco.mju_mulQuat(quat_axis[c, k], levels[c][k][1], np.r_[0.0, tree.jnt_axis[j]])

        def stacked(x):  # (C, L, d) -> (d, L, C, 1) float32
            return np.float32(np.transpose(x, (2, 1, 0))[..., None])

        self.pos = stacked(np.array([[p for p, _, _ in chain] for chain in levels]))
        self.quat = stacked(np.array([[q for _, q, _ in chain] for chain in levels]))
        self.axis = stacked(axis)  # hinge axis after the offset rotation Q
        self.quat_axis = stacked(quat_axis)  # Q * (0, axis)
        self.hinge = (joints >= 0).T[..., None]  # (L, C, 1)
        self.qadr = np.where(joints >= 0, tree.jnt_qposadr[joints], 0).T  # (L, C)
        self.vadr = np.where(joints >= 0, tree.jnt_dofadr[joints], 0).T
        self.site_pos = stacked(np.array([c[-1][0] for c in chains])[:, None])[:, 0]
        self.site_quat = stacked(np.array([c[-1][1] for c in chains])[:, None])[:, 0]

    def states(self, qpos: jax.Array, qvel: jax.Array) -> jax.Array:
        """World-frame states (13, C, N) of the C sites for qpos (N, nq) and qvel (N, nv): rows
        position (3), quaternion (w, x, y, z) (4), linear (3) and angular velocity (3)."""
        n = qpos.shape[0]
        rates = jnp.where(self.hinge, qvel.T[self.vadr], 0.0)  # (L, C, N)
        half = 0.5 * jnp.where(self.hinge, qpos.T[self.qadr], 0.0)
        # each level turns by its offset rotation Q, then by its hinge:
        # Q * (cos, sin axis) = cos Q + sin (Q * axis)
        sin, cos = C.sincos(half)
        turns = cos * self.quat + sin * self.quat_axis  # (4, L, C, N)
        p = v = w = jnp.zeros((3, 1, n), jnp.float32)
        q = jnp.zeros((4, 1, n), jnp.float32).at[0].set(1.0)
        for k in range(self.qadr.shape[0]):
            offset = _qrot(q, self.pos[:, k])  # to the child's origin, world frame
            p, v = p + offset, v + _cross(w, offset)
            w = w + _qrot(q, self.axis[:, k]) * rates[k]
            q = _qmul(q, turns[:, k])
            p, q, v, w = jax.lax.optimization_barrier((p, q, v, w))
        offset = _qrot(q, self.site_pos)
        return jnp.concatenate([p + offset, _qmul(q, self.site_quat), v + _cross(w, offset), w])


def _folded_chain(tree: KinematicTree, site: str) -> list[tuple]:
    """Levels (offset position, offset quaternion, hinge joint id) from the world to ``site``'s
    body, one per joint, jointless bodies folded into the next offset; last: the site offset."""
    body, bodies = tree.sites[site][0], []
    while body != 0:
        bodies.append(body)
        body = int(tree.parent[body])
    pos, quat, levels = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0]), []
    for b in reversed(bodies):
        pos, quat = _compose(pos, quat, tree.body_pos[b], tree.body_quat[b])
        for j in tree.body_joints[b]:
            if tree.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE or np.any(tree.jnt_pos[j]):
                raise ValueError(f"site {site!r}: only hinges at their body's origin are supported")
            levels.append((pos, quat, int(j)))
            pos, quat = np.zeros(3), np.array([1.0, 0.0, 0.0, 0.0])
    return levels + [_compose(pos, quat, *tree.sites[site][1:])]


def _compose(pos, quat, rel_pos, rel_quat) -> tuple[np.ndarray, np.ndarray]:
    """Frame (pos, quat) followed by the relative frame (rel_pos, rel_quat), float64."""
    out_pos, out_quat = np.zeros(3), np.zeros(4)
    mujoco.mju_rotVecQuat(out_pos, np.asarray(rel_pos, np.float64), quat)
    mujoco.mju_mulQuat(out_quat, quat, np.asarray(rel_quat, np.float64))
    return pos + out_pos, out_quat


def _qmul(a, b):
    """Hamilton products of quaternions stored on the leading axis (4, ...)."""
    return jnp.stack(C.multiply(tuple(a), tuple(b)))


def _cross(a, b):
    """Cross products of vectors stored on the leading axis (3, ...)."""
    return jnp.stack(C.cross(tuple(a), tuple(b)))


def _qrot(q, x):
    """Vectors x (3, ...) rotated by quaternions q (4, ...), both on the leading axis."""
    return jnp.stack(C.rotate(tuple(q), tuple(x)))
