"""Actions to MuJoCo controls beyond plain torques: affine position targets, and integrated
velocity targets (``intvelocity``) whose activations restart at the reset pose; and the aligned
host buffers through which the mujoco backend hands states and actions to JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
import pytest

from isaacgymenvs_gmi.sim.mjx_backend import _load
from isaacgymenvs_gmi.sim.mjx_import import import_mjx
from isaacgymenvs_gmi.sim.mujoco_backend import WorldBatch, aligned_empty
from isaacgymenvs_gmi.tasks.base import stateful_actuator_qpos

XML = """
<mujoco>
  <option timestep="0.01"/>
  <worldbody>
    <body name="slider_a">
      <joint name="a" type="slide" axis="1 0 0" range="-1 1" damping="1"/>
      <geom size="0.1" mass="1"/>
    </body>
    <body name="hinge_b" pos="0 1 0">
      <joint name="b" type="hinge" axis="0 0 1" range="-2 2" damping="1"/>
      <geom type="capsule" size="0.05" fromto="0 0 0 0.3 0 0" mass="1"/>
    </body>
  </worldbody>
  <actuator>
    <intvelocity joint="b" kp="50" actrange="-2 2"/>
    <position joint="a" kp="40"/>
  </actuator>
</mujoco>
"""


@pytest.fixture(scope="module")
def model():
    return mujoco.MjModel.from_xml_string(XML)


def test_activation_index_points_at_the_integrated_joint(model):
    assert model.na == 1
    np.testing.assert_array_equal(stateful_actuator_qpos(model), [1])  # joint b's qpos address


def test_other_stateful_actuators_are_refused():
    xml = XML.replace(
        '<intvelocity joint="b" kp="50" actrange="-2 2"/>',
        '<general joint="b" dyntype="filter" dynprm="0.1" name="filtered"/>',
    )
    with pytest.raises(ValueError, match="'filtered'.*intvelocity"):
        stateful_actuator_qpos(mujoco.MjModel.from_xml_string(xml))


def test_world_batch_offsets_controls_and_restarts_activations(model):
    worlds = WorldBatch(model, num_envs=2, nstep=5, num_threads=1)
    # actuator 0 (intvelocity on b) gets a target speed, actuator 1 (position on a) a target
    ctrl = np.array([[0.5, 0.2], [-1.0, -0.4]])
    worlds.step(ctrl, scale=np.array([2.0, 1.0]), offset=np.array([0.0, 0.1]))
    act = worlds.state[:, worlds.act_slice]
    # the target integrates ctrl * scale over 5 steps of 0.01 s, from the activation at rest (0)
    np.testing.assert_allclose(act[:, 0], [0.5 * 2 * 0.05, -1.0 * 2 * 0.05], atol=1e-12)
    np.testing.assert_allclose(worlds._ctrl[:, 0, 1], [0.3, -0.3])  # position target + offset
    qpos = np.array([[0.25, 0.7], [-0.5, -1.2]])
    worlds.load(np.array([1]), qpos[1:], np.zeros((1, 2)))
    np.testing.assert_allclose(worlds.state[1, worlds.act_slice], [-1.2])  # joint b's new pose
    np.testing.assert_allclose(worlds.state[0, worlds.act_slice], act[0])  # untouched world
    worlds.close()


def test_mjx_load_restarts_activations(model):
    mjx = import_mjx()
    mx = mjx.put_model(model)
    data = mjx.make_data(mx)
    batch = data.replace(
        qpos=jnp.zeros((2, 2)),
        qvel=jnp.ones((2, 2)),
        act=jnp.full((2, 1), 0.3),
        qacc_warmstart=jnp.ones((2, 2)),
        time=jnp.ones((2,)),
    )
    index = jnp.asarray(stateful_actuator_qpos(model))
    qpos = jnp.asarray([[0.25, 0.7], [-0.5, -1.2]])
    out = _load(batch, jnp.asarray([False, True]), qpos, jnp.zeros((2, 2)), index)
    np.testing.assert_allclose(out.act, [[0.3], [-1.2]])
    np.testing.assert_allclose(out.qpos, [[0.0, 0.0], [-0.5, -1.2]])
    np.testing.assert_allclose(out.time, [1.0, 0.0])


@pytest.mark.parametrize("shape", [(1024, 29), (3, 7), (4096, 9)])
def test_aligned_host_buffers_are_read_in_place(shape):
    buf = aligned_empty(shape, np.float32)
    assert buf.shape == shape and buf.dtype == np.float32 and buf.flags.c_contiguous
    assert buf.ctypes.data % 64 == 0
    buf[:] = 1.0
    # XLA's CPU client adopts the numpy memory instead of copying it
    assert jax.device_put(buf).unsafe_buffer_pointer() == buf.ctypes.data
