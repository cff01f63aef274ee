"""The four IsaacGymEnvs resolvers, as seen through OmegaConf interpolation."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from isaacgymenvs_gmi.config import register_resolvers
from isaacgymenvs_gmi.config.resolvers import RESOLVERS


@pytest.fixture(autouse=True)
def _resolvers() -> None:
    register_resolvers()


def _value(expr: str, **top: object) -> object:
    return OmegaConf.create({"out": expr, **top}).out


def test_registration_is_idempotent():
    register_resolvers()
    register_resolvers()
    for name in RESOLVERS:
        assert OmegaConf.has_resolver(name)


@pytest.mark.parametrize(
    "expr, expected",
    [
        ('${eq:gpu,"gpu"}', True),
        ('${eq:GPU,"gpu"}', True),
        ('${eq:cpu,"gpu"}', False),
        ('${contains:"cuda","cuda:1"}', True),
        ('${contains:"CUDA","cuda:1"}', True),
        ('${contains:"cuda","cpu"}', False),
        ("${if:True,1,2}", 1),
        ("${if:False,1,2}", 2),
        ("${if:'',yes,no}", "no"),
        ("${if:ckpt.pth,yes,no}", "yes"),
        ("${resolve_default:4096,''}", 4096),
        ("${resolve_default:4096,64}", 64),
        ("${resolve_default:Ant,run1}", "run1"),
    ],
)
def test_resolver_semantics(expr, expected):
    assert _value(expr) == expected


def test_resolvers_with_interpolated_arguments():
    top = {"num_envs": "", "pipeline": "GPU", "sim_device": "cuda:0", "checkpoint": ""}
    assert _value("${resolve_default:512,${num_envs}}", **top) == 512
    assert _value('${eq:${pipeline},"gpu"}', **top) is True
    assert _value('${contains:"cuda",${sim_device}}', **top) is True
    assert _value("${if:${checkpoint},True,False}", **top) is False
    top["num_envs"] = 8
    assert _value("${resolve_default:512,${num_envs}}", **top) == 8
