"""GmiConfig: typed, validated form of the ``gmi`` group."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from isaacgymenvs_gmi.config import GMI_BACKENDS, ConfigError, GmiConfig
from isaacgymenvs_gmi.config.debug import DebugSettings


def test_missing_keys_take_defaults():
    assert GmiConfig.from_node({}) == GmiConfig()
    assert GmiConfig.from_node(None) == GmiConfig()


@pytest.mark.parametrize(
    "given, field, expected",
    [
        ({"per_gpu": 3}, "per_gpu", 3),
        ({"per_gpu": "4"}, "per_gpu", 4),
        ({"num_gpus": 2}, "num_gpus", 2),
        ({"num_gpus": None}, "num_gpus", None),
        ({"backend": "MPS"}, "backend", "mps"),
        ({"backend": "cpu"}, "backend", "cpu"),
        ({"mode": "async"}, "mode", "async"),
        ({"mode": "serve"}, "mode", "serve"),
        ({"mode": "pbt"}, "mode", "pbt"),
        ({"comm": "mrr"}, "comm", "mrr"),
        ({"intra_device": "gloo"}, "intra_device", "gloo"),
        ({"intra_device": "SHM"}, "intra_device", "shm"),
        ({"sm_percent": [30, 70.5]}, "sm_percent", (30.0, 70.5)),
        ({"sm_percent": (100,)}, "sm_percent", (100.0,)),
        ({"debug": {"sync": True}}, "debug", DebugSettings(sync=True)),
        ({"debug": {"handoffs": "bare"}}, "debug", DebugSettings(handoffs="bare")),
        ({"debug": {"trace_nonfinite": True}}, "debug", DebugSettings(trace_nonfinite=True)),
    ],
)
def test_good_values(given, field, expected):
    assert getattr(GmiConfig.from_node(given), field) == expected


def test_from_dictconfig_with_list():
    node = OmegaConf.create({"per_gpu": 2, "sm_percent": [50, 50]})
    assert GmiConfig.from_node(node) == GmiConfig(per_gpu=2, sm_percent=(50.0, 50.0))


@pytest.mark.parametrize(
    "given, message",
    [
        ({"per_gpu": 0}, "gmi.per_gpu=0: must be an integer >= 1"),
        ({"per_gpu": -1}, "gmi.per_gpu=-1: must be an integer >= 1"),
        ({"per_gpu": 1.5}, "gmi.per_gpu=1.5: must be an integer >= 1"),
        ({"per_gpu": "abc"}, "gmi.per_gpu='abc': must be an integer >= 1"),
        ({"per_gpu": "3x"}, "gmi.per_gpu='3x': must be an integer >= 1"),
        ({"per_gpu": True}, "gmi.per_gpu=True: must be an integer >= 1"),
        ({"per_gpu": None}, "gmi.per_gpu=None: must be an integer >= 1"),
        ({"num_gpus": 0}, "gmi.num_gpus=0: must be an integer >= 1"),
        ({"num_gpus": False}, "gmi.num_gpus=False: must be an integer >= 1"),
        ({"backend": "nvlink"}, "gmi.backend='nvlink': must be one of 'auto', 'mps', 'mig'"),
        ({"backend": 3}, "gmi.backend=3: must be one of"),
        ({"mode": 3}, "gmi.mode=3: must be the name of a mode"),  # which: the mode registry
        ({"comm": "nccl"}, "gmi.comm='nccl': must be one of 'auto', 'mpr', 'mrr', 'har'"),
        ({"intra_device": "nvlink"}, "gmi.intra_device='nvlink': must be one of 'auto', 'shm'"),
        ({"sm_percent": 50}, "gmi.sm_percent=50: must be null or a non-empty list"),
        ({"sm_percent": []}, "gmi.sm_percent=[]: must be null or a non-empty list"),
        ({"sm_percent": [50, 0]}, "gmi.sm_percent[1]=0: must be a number in (0, 100]"),
        ({"sm_percent": [101]}, "gmi.sm_percent[0]=101: must be a number in (0, 100]"),
        ({"sm_percent": ["x"]}, "gmi.sm_percent[0]='x': must be a number in (0, 100]"),
        ({"per_gpus": 2}, "gmi.per_gpus=2: unknown key; known keys under gmi: per_gpu, num_gpus"),
        ({"debug": {"sync": "yes"}}, "gmi.debug.sync='yes': must be true or false"),
        ({"debug": {"sync": 1}}, "gmi.debug.sync=1: must be true or false"),
        ({"debug": {"handoffs": "no"}}, "gmi.debug.handoffs='no': must be one of 'held', 'bare'"),
        (
            {"debug": {"syncs": True}},
            "gmi.debug.syncs=True: unknown key; known keys under gmi.debug: sync, handoffs, trace_nonfinite",  # noqa: E501,
        ),
    ],
)
def test_bad_values(given, message):
    with pytest.raises(ConfigError) as info:
        GmiConfig.from_node(given)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ValueError)


def test_unknown_key_lists_every_known_key():
    with pytest.raises(ConfigError, match=r"^gmi\.foo=") as info:
        GmiConfig.from_node({"foo": 1})
    for name in ("per_gpu", "num_gpus", "backend", "mode", "comm", "sm_percent"):
        assert name in str(info.value)
    assert info.value.key == "gmi.foo"


def test_error_lists_all_allowed_values():
    with pytest.raises(ConfigError) as info:
        GmiConfig.from_node({"backend": "bad"})
    for name in GMI_BACKENDS:
        assert repr(name) in str(info.value)


def test_not_a_mapping():
    with pytest.raises(ConfigError, match="gmi=3: must be a mapping"):
        GmiConfig.from_node(3)
