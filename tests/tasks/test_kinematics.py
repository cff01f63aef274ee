"""Our JAX forward kinematics against MuJoCo's own (``mj_forward``) on a model with every joint
kind a task may use: hinges with off-origin anchors, a slide, a free body; and the batched
hinge-chain walker on two chains of different depths with jointless links between hinges."""

from __future__ import annotations

import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from isaacgymenvs_gmi.tasks import rotations
from isaacgymenvs_gmi.tasks.indexing import columns
from isaacgymenvs_gmi.tasks.kinematics import HingeChains, KinematicTree

XML = """
<mujoco>
  <worldbody>
    <body name="a" pos="0.1 0.2 0.3" quat="0.9 0.1 0.3 0.2">
      <joint type="hinge" axis="0 1 1" pos="0.05 0 0.1"/>
      <geom size="0.1"/>
      <body name="b" pos="0.3 0 0" euler="10 20 30">
        <joint type="slide" axis="1 0 0.5"/>
        <joint type="hinge" axis="1 0 0" pos="0 0.1 0"/>
        <geom size="0.1"/>
        <site name="tip" pos="0.1 0.2 0.05" euler="5 40 3"/>
      </body>
    </body>
    <body name="object">
      <freejoint/>
      <geom size="0.1"/>
      <site name="on_object" pos="0.1 0 0"/>
    </body>
  </worldbody>
</mujoco>
"""


@pytest.fixture(scope="module")
def model_and_states():
    m = mujoco.MjModel.from_xml_string(XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    qpos, qvel, expected = [], [], []
    for _ in range(4):
        q = m.qpos0.copy()
        q[:3] = rng.normal(size=3)
        q[3:6] = rng.normal(size=3)
        quat = rng.normal(size=4)
        q[6:10] = quat / np.linalg.norm(quat)
        v = rng.normal(size=m.nv)
        v[3:] = 0.0  # velocities are derived for hinge and slide chains only
        d.qpos[:], d.qvel[:] = q, v
        mujoco.mj_forward(m, d)
        tip_vel = np.zeros(6)  # [angular, linear], world frame
        mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, 0, tip_vel, 0)
        xquat = np.zeros(4)
        mujoco.mju_mat2Quat(xquat, d.site_xmat[0])
        expected.append((d.site_xpos.copy(), xquat, tip_vel))
        qpos.append(q)
        qvel.append(v)
    return m, np.array(qpos), np.array(qvel), expected


def _same_rotation(q1, q2, atol):
    assert min(np.abs(q1 - q2).max(), np.abs(q1 + q2).max()) < atol


def test_site_poses_match_mujoco(model_and_states):
    m, qpos, _, expected = model_and_states
    tree = KinematicTree.from_model(m)
    pos, quat = tree.site_poses(jnp.asarray(qpos, jnp.float32), ("tip", "on_object"))
    assert pos.shape == (4, 2, 3) and quat.shape == (4, 2, 4)
    for i, (xpos, tip_quat, _) in enumerate(expected):
        np.testing.assert_allclose(pos[i], xpos, atol=1e-5)
        _same_rotation(np.asarray(quat[i, 0]), tip_quat, 1e-5)


def test_site_velocities_match_mujoco(model_and_states):
    m, qpos, qvel, expected = model_and_states
    tree = KinematicTree.from_model(m)
    q, v = jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel, jnp.float32)
    pos, quat, lin, ang = tree.site_states(q, v, ("tip",))
    for i, (xpos, _, vel) in enumerate(expected):
        np.testing.assert_allclose(pos[i, 0], xpos[0], atol=1e-5)
        np.testing.assert_allclose(ang[i, 0], vel[:3], atol=1e-5)
        np.testing.assert_allclose(lin[i, 0], vel[3:], atol=1e-5)
    np.testing.assert_allclose(jnp.linalg.norm(quat, axis=-1), 1.0, atol=1e-6)


def test_unknown_site_is_named():
    tree = KinematicTree.from_model(mujoco.MjModel.from_xml_string(XML))
    with pytest.raises(KeyError, match="nope"):
        tree.site_poses(jnp.zeros((1, 10)), ("nope",))


def test_quaternion_helpers_agree_with_mujoco():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=4), rng.normal(size=4)
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    ab = np.zeros(4)
    mujoco.mju_mulQuat(ab, a, b)
    np.testing.assert_allclose(rotations.multiply(jnp.asarray(a), jnp.asarray(b)), ab, atol=1e-6)
    axis = np.array([0.0, 0.6, 0.8])
    turn = np.zeros(4)
    mujoco.mju_axisAngle2Quat(turn, axis, 0.7)
    np.testing.assert_allclose(rotations.from_axis_angle(jnp.asarray(axis), 0.7), turn, atol=1e-6)
    v = rng.normal(size=3)
    back = rotations.rotate(
        rotations.conjugate(jnp.asarray(a)), rotations.rotate(jnp.asarray(a), v)
    )
    np.testing.assert_allclose(back, v, atol=1e-5)


CHAINS_XML = """
<mujoco>
  <worldbody>
    <body name="mount" pos="0 0 0.5" euler="90 0 180">
      <body name="a1" pos="0.1 0 0.2" euler="0 10 0">
        <joint type="hinge" axis="1 0 0"/>
        <geom size="0.02"/>
        <body name="a2" pos="0 0 0.1">
          <joint type="hinge" axis="0 1 0.3"/>
          <geom size="0.02"/>
          <body name="link" pos="0 0.02 0.05" euler="5 0 -7">
            <geom size="0.02"/>
            <body name="a3" pos="0 0 0.04">
              <joint type="hinge" axis="0 1 0"/>
              <geom size="0.02"/>
              <site name="deep" pos="0.01 0 0.03" euler="0 30 0"/>
            </body>
          </body>
        </body>
      </body>
      <body name="b1" pos="-0.1 0 0.1" euler="20 0 0">
        <joint type="hinge" axis="0 0 1"/>
        <geom size="0.02"/>
        <site name="short" pos="0 0.05 0"/>
      </body>
    </body>
  </worldbody>
</mujoco>
"""


def test_hinge_chains_match_mujoco():
    m = mujoco.MjModel.from_xml_string(CHAINS_XML)
    d = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    qpos, qvel = rng.uniform(-2, 2, (3, m.nq)), rng.normal(0, 3, (3, m.nv))
    tree = KinematicTree.from_model(m)
    chains = HingeChains(tree, ("deep", "short"))
    states = np.asarray(chains.states(jnp.asarray(qpos, jnp.float32), jnp.asarray(qvel)))
    assert states.shape == (13, 2, 3)
    # the tree walk agrees (hinges at their body's origin take its folded path)
    pos, quat = tree.site_poses(jnp.asarray(qpos, jnp.float32), ("deep", "short"))
    np.testing.assert_allclose(np.asarray(pos).transpose(2, 1, 0), states[0:3], atol=1e-5)
    for c in range(2):
        for i in range(3):
            _same_rotation(np.asarray(quat[i, c]), states[3:7, c, i], 1e-5)
    for i in range(3):
        d.qpos[:], d.qvel[:] = qpos[i], qvel[i]
        mujoco.mj_forward(m, d)
        for c, name in enumerate(("deep", "short")):
            site = m.site(name).id
            quat, vel = np.zeros(4), np.zeros(6)
            mujoco.mju_mat2Quat(quat, d.site_xmat[site])
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, site, vel, 0)
            got = states[:, c, i]
            np.testing.assert_allclose(got[0:3], d.site_xpos[site], atol=1e-5)
            _same_rotation(got[3:7], quat, 1e-5)
            np.testing.assert_allclose(got[7:10], vel[3:], atol=1e-4)  # linear
            np.testing.assert_allclose(got[10:13], vel[:3], atol=1e-4)  # angular


def test_hinge_chains_refuse_other_joints():
    tree = KinematicTree.from_model(mujoco.MjModel.from_xml_string(XML))
    with pytest.raises(ValueError, match="tip"):
        HingeChains(tree, ("tip",))


def test_rotations_match_mujoco():
    """rotate / rotate_inverse / multiply against MuJoCo's quaternion routines."""
    rng = np.random.default_rng(3)
    q = rng.normal(size=(5, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    v = rng.normal(size=(5, 3))
    r = rng.normal(size=(5, 4))
    expected_rot, expected_inv, expected_mul = np.empty((5, 3)), np.empty((5, 3)), np.empty((5, 4))
    for i in range(5):
        inverse = np.empty(4)
        mujoco.mju_negQuat(inverse, q[i])
        mujoco.mju_rotVecQuat(expected_rot[i], v[i], q[i])
        mujoco.mju_rotVecQuat(expected_inv[i], v[i], inverse)
        mujoco.mju_mulQuat(expected_mul[i], q[i], r[i])
    np.testing.assert_allclose(
        rotations.rotate(jnp.asarray(q), jnp.asarray(v)), expected_rot, atol=1e-6
    )
    np.testing.assert_allclose(
        rotations.rotate_inverse(jnp.asarray(q), jnp.asarray(v)), expected_inv, atol=1e-6
    )
    np.testing.assert_allclose(
        rotations.multiply(jnp.asarray(q), jnp.asarray(r)), expected_mul, atol=1e-5
    )
    # a constant vector broadcast over a batch of rotations
    np.testing.assert_allclose(
        rotations.rotate(jnp.asarray(q), jnp.asarray(v[0])),
        [rotations.rotate(jnp.asarray(q[i]), jnp.asarray(v[0])) for i in range(5)],
        atol=1e-6,
    )


def test_columns_reads_consecutive_indices_as_a_slice():
    assert columns(np.array([3, 4, 5])) == slice(3, 6)
    np.testing.assert_array_equal(columns([0, 2, 4]), [0, 2, 4])
    np.testing.assert_array_equal(columns([5, 4]), [5, 4])
    x = np.arange(20).reshape(2, 10)
    np.testing.assert_array_equal(x[:, columns([3, 4, 5])], x[:, [3, 4, 5]])
