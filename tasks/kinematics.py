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

from . import rotations

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
        """World (pos (N, 3), quat (N, 4)) of ``wanted`` bodies and their ancestors."""
        n = qpos.shape[0]
        frames = {0: (jnp.zeros((n, 3), qpos.dtype), jnp.tile(jnp.array([1.0, 0, 0, 0]), (n, 1)))}
        for body in sorted({b for w in wanted for b in self._ancestors(w)}):
            p, q = frames[int(self.parent[body])]
            pos = p + rotations.rotate(q, jnp.asarray(self.body_pos[body], qpos.dtype))
            quat = rotations.multiply(q, jnp.asarray(self.body_quat[body], qpos.dtype))
            for j in self.body_joints[body]:
                adr, kind = int(self.jnt_qposadr[j]), self.jnt_type[j]
                if kind == _FREE:
                    pos, quat = qpos[:, adr : adr + 3], qpos[:, adr + 3 : adr + 7]
                    continue
                anchor = pos + rotations.rotate(quat, jnp.asarray(self.jnt_pos[j], qpos.dtype))
                if kind == _SLIDE:
                    axis = rotations.rotate(quat, jnp.asarray(self.jnt_axis[j], qpos.dtype))
                    pos = pos + axis * qpos[:, adr : adr + 1]
                    continue
                if kind == _HINGE:
                    turn = rotations.from_axis_angle(jnp.asarray(self.jnt_axis[j]), qpos[:, adr])
                else:  # ball
                    turn = qpos[:, adr : adr + 4]
                quat = rotations.multiply(quat, turn)
                pos = anchor - rotations.rotate(quat, jnp.asarray(self.jnt_pos[j], qpos.dtype))
            # a barrier per body: without it XLA fuses the whole chain and recomputes each
            # parent's product for every child (seconds per call on a 10-body arm)
            frames[body] = jax.lax.optimization_barrier((pos, quat))
        return frames

    def site_poses(self, qpos: jax.Array, names: tuple[str, ...]) -> tuple[jax.Array, jax.Array]:
        """World positions (N, k, 3) and quaternions (N, k, 4) of sites ``names`` at ``qpos``."""
        missing = [s for s in names if s not in self.sites]
        if missing:
            raise KeyError(f"sites {missing} not in the model; it has {sorted(self.sites)}")
        frames = self._body_frames(qpos, [self.sites[s][0] for s in names])
        pos, quat = [], []
        for s in names:
            body, offset, rel = self.sites[s]
            p, q = frames[body]
            pos.append(p + rotations.rotate(q, jnp.asarray(offset, qpos.dtype)))
            quat.append(rotations.multiply(q, jnp.asarray(rel, qpos.dtype)))
        return jnp.stack(pos, axis=1), jnp.stack(quat, axis=1)

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
