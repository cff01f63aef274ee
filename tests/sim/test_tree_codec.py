"""Pytree structures written as JSON and read back equal (containers, NamedTuples, MJX's data
with its static arrays); a type from outside the allowed packages, one not imported, or static
data of an unknown kind is refused, never imported or built."""

from __future__ import annotations

import json
from typing import NamedTuple

import jax
import mujoco
import numpy as np
import pytest
from jax.tree_util import tree_structure

from isaacgymenvs_gmi.sim import tree_codec
from isaacgymenvs_gmi.sim.tree_codec import UnsupportedTree


class Pair(NamedTuple):
    left: object
    right: object


def _round_trip(tree, also_allowed=()):
    text = json.dumps(tree_codec.encode(tree_structure(tree)))
    return tree_codec.decode(json.loads(text), also_allowed)


def test_containers_and_named_tuples_come_back_equal():
    tree = ({"b": [1, (2, None)], "a": 3.0}, Pair(np.ones(2), ()), None, [])
    assert _round_trip(tree, [__name__]) == tree_structure(tree)


def test_mjx_data_comes_back_equal_with_its_static_arrays():
    from mujoco import mjx

    model = mujoco.MjModel.from_xml_string(
        "<mujoco><worldbody><body><freejoint/><geom size='.1'/></body>"
        "<geom type='plane' size='1 1 .1'/></worldbody></mujoco>"
    )
    data = mjx.make_data(mjx.put_model(model))
    assert _round_trip((data, {"k": data})) == tree_structure((data, {"k": data}))


def test_unknown_types_and_static_data_are_refused():
    with pytest.raises(UnsupportedTree, match="not from an allowed package"):
        _round_trip(Pair(1, 2))  # this test module is not allowed unless named
    spec = {"type": "isaacgymenvs_gmi.not_imported:Thing", "static": None, "children": []}
    with pytest.raises(UnsupportedTree, match="no such type imported"):
        tree_codec.decode(spec)
    spec = {"type": "os:system", "static": None, "children": []}
    with pytest.raises(UnsupportedTree, match="not from an allowed package"):
        tree_codec.decode(spec)

    class Odd:  # static data of a kind the codec does not know
        pass

    odd = jax.tree_util.register_static(type("OddNode", (), {"__hash__": lambda s: 0}))
    with pytest.raises(UnsupportedTree, match="static data of type OddNode"):
        tree_codec.encode(tree_structure(odd()))
    with pytest.raises(UnsupportedTree, match="static data of type Odd"):
        tree_codec._encode_static(Odd())
