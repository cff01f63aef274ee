"""The mujoco backend's jitted inputs: JAX views of host buffers that the step changes in place."""

from __future__ import annotations

import jax
import numpy as np

from isaacgymenvs_gmi.sim.mujoco_backend import aligned_empty, shared_input

CPU = jax.devices("cpu")[0]


def test_a_call_reads_what_the_buffer_holds_when_it_runs():
    buf = aligned_empty((8, 5), np.float32)
    buf[:] = 1.0
    view = shared_input(buf, CPU)
    assert isinstance(view, jax.Array) and view.unsafe_buffer_pointer() == buf.ctypes.data
    total = jax.jit(lambda x: x.sum(axis=1))
    np.testing.assert_array_equal(total(view), 5.0)
    buf[3] = 2.0  # the step writes the next physics frame like this
    out = np.asarray(total(view))
    assert out[3] == 10.0 and (np.delete(out, 3) == 5.0).all()


def test_memory_the_client_would_copy_is_passed_as_it_is():
    raw = aligned_empty((8 * 5 + 1,), np.float32)
    unaligned = raw[1:].reshape(8, 5)  # 4 bytes past a 64-byte boundary
    unaligned[:] = 1.0
    assert shared_input(unaligned, CPU) is unaligned
