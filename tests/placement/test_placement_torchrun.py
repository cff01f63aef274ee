"""torchrun's ranks as a GMI layout: pure functions of the environment and the config."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.config import ConfigError, GmiConfig
from isaacgymenvs_gmi.placement.torchrun import torchrun_layout, torchrun_world


def test_torchrun_world_is_read_from_a_rank_environment_only():
    assert torchrun_world({"WORLD_SIZE": "4"}) is None  # not started by torchrun
    rank_env = {"TORCHELASTIC_RUN_ID": "x", "LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "4"}
    assert torchrun_world(rank_env) == (4, 2)


@pytest.mark.parametrize(
    "gmi,devices,world,expected",
    [
        ({}, 1, (4, 2), (2, 1, 2)),  # 2 nodes x 1 device x 2 GMIs
        ({"per_gpu": 2}, 1, (4, 2), (2, 1, 2)),
        ({}, 2, (8, 4), (2, 2, 2)),
        ({}, 2, (2, 2), (1, 2, 1)),
    ],
)
def test_torchrun_ranks_split_over_devices(gmi, devices, world, expected):
    layout = torchrun_layout(GmiConfig.from_node(gmi), devices, world)
    assert (layout.num_nodes, layout.devices_per_node, layout.per_device) == expected


@pytest.mark.parametrize(
    "gmi,devices,world,key",
    [
        ({}, 2, (3, 3), "gmi.num_gpus"),  # 3 ranks on 2 devices
        ({"per_gpu": 3}, 1, (4, 2), "gmi.per_gpu"),  # torchrun started 2 per node
    ],
)
def test_torchrun_ranks_that_do_not_split_are_refused(gmi, devices, world, key):
    with pytest.raises(ConfigError, match=key):
        torchrun_layout(GmiConfig.from_node(gmi), devices, world)
