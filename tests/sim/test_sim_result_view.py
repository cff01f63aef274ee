"""The mujoco backend's hand-over of a jitted result: a writable numpy view of its memory."""

from __future__ import annotations

import gc
import warnings

import jax
import numpy as np
import torch

from isaacgymenvs_gmi.sim.mujoco_backend import writable_view


def test_the_view_shares_the_result_and_keeps_it_alive():
    result = jax.jit(lambda x: x * 2.0)(np.ones((4, 3), np.float32))
    pointer = result.unsafe_buffer_pointer()
    view = writable_view(result)
    del result
    gc.collect()
    assert view.flags.writeable and view.ctypes.data == pointer
    assert view.shape == (4, 3) and view.dtype == np.float32
    np.testing.assert_array_equal(view, 2.0)
    view[1] = 7.0  # first observations of new episodes are written like this
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch warns about read-only arrays
        published = torch.from_numpy(view[:, :2])
    assert published.data_ptr() == pointer
    assert published[1].eq(7.0).all() and published[0].eq(2.0).all()
