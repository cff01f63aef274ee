"""Layout, core sets and backend choice: pure functions, table-driven."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from isaacgymenvs_gmi.config import ConfigError, GmiConfig
from isaacgymenvs_gmi.gmi.binding import own_cores
from isaacgymenvs_gmi.placement.cpu_sets import (
    choose_cores,
    oversubscribed,
    share_cores,
    split_cores,
)
from isaacgymenvs_gmi.placement.gpu_sharing import (
    MPS_MAX_CLIENTS,
    choose_backend,
    node_layout,
    sm_percent,
)
from isaacgymenvs_gmi.placement.inventory import GpuInfo, Inventory, MigInstance
from isaacgymenvs_gmi.placement.layout import GmiLayout
from isaacgymenvs_gmi.runners import MODES


def gpu(index=0, cc=(9, 0), mig=0) -> GpuInfo:
    instances = tuple(MigInstance(f"MIG-{index}-{i}", "1g.10gb", 10 << 30, 16) for i in range(mig))
    return GpuInfo(index, "H100", f"GPU-{index}", cc, 80 << 30, 132, mig > 0, instances)


CPU = Inventory(gpus=(), cores=(0, 1))
ONE_GPU = Inventory(gpus=(gpu(),), cores=tuple(range(16)))
TWO_GPUS = Inventory(gpus=(gpu(0), gpu(1)), cores=tuple(range(16)))
MIG_GPU = Inventory(gpus=(gpu(0, mig=3),), cores=tuple(range(16)))
V100 = Inventory(gpus=(gpu(0, cc=(7, 0)),), cores=tuple(range(8)))


def test_mpl_places_and_leaders():
    layout = GmiLayout(num_nodes=2, devices_per_node=2, per_device=3)
    assert layout.world_size == 12
    assert layout.mpl() == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    p = layout.place(7)
    assert (p.node, p.local_rank, p.device, p.local_device, p.slot) == (1, 1, 2, 0, 1)
    assert not p.is_leader and layout.place(6).is_leader
    assert layout.leaders() == [0, 3, 6, 9]
    with pytest.raises(ValueError):
        layout.place(12)
    with pytest.raises(ValueError):
        GmiLayout(1, 0, 2)


@pytest.mark.parametrize(
    ("layout", "k", "expected"),
    [
        (GmiLayout(1, 1, 4), 2, GmiLayout(1, 1, 2)),  # part of the only device
        (GmiLayout(1, 3, 2), 4, GmiLayout(1, 2, 2)),  # whole devices
        (GmiLayout(2, 2, 2), 4, GmiLayout(1, 2, 2)),  # the first node, whole
    ],
)
def test_the_first_gmis_form_a_layout_of_their_own(layout, k, expected):
    first = layout.first(k)
    assert first == expected
    assert sorted(g for row in first.mpl() for g in row) == list(range(k))


@pytest.mark.parametrize(("layout", "k"), [(GmiLayout(1, 2, 3), 4), (GmiLayout(2, 2, 2), 6)])
def test_first_gmis_that_split_a_device_or_span_nodes_are_refused(layout, k):
    with pytest.raises(ValueError, match="whole devices"):
        layout.first(k)


@pytest.mark.parametrize(
    "cores,devices,per_device,expected",
    [
        ([0, 1], 1, 1, [[0, 1]]),
        ([0, 1], 1, 2, [[0], [1]]),
        ([0, 1], 2, 1, [[0], [1]]),
        ([0, 1], 1, 3, [[0], [1], [0]]),  # more GMIs than cores: shared round-robin
        ([0, 1, 2, 3, 4, 5], 2, 2, [[0, 1], [2], [3, 4], [5]]),
        ([4, 5, 6, 7], 1, 2, [[4, 5], [6, 7]]),
    ],
)
def test_split_cores(cores, devices, per_device, expected):
    assert split_cores(cores, devices, per_device) == expected
    assert oversubscribed(cores, devices, per_device) == (devices * per_device > len(cores))


@pytest.mark.parametrize(
    "cores,devices,per_device,own,expected",
    [
        ([0, 1], 1, 3, [1], [[0], [1], [1]]),  # the trainer alone, the actors share
        ([0, 1, 2], 1, 5, [2], [[0], [1], [2], [2], [2]]),
        ([0, 1], 1, 3, [2], [[0], [1], [0]]),  # nothing left for the rest: round-robin
        ([0, 1, 2, 3], 2, 3, [1], [[0], [1], [1], [2], [3], [2]]),  # only device 0 keeps
        ([0, 1, 2, 3], 1, 2, [1], [[0, 1], [2, 3]]),  # enough cores: unchanged
    ],
)
def test_split_cores_keeps_own_cores_for_the_first_gmis(cores, devices, per_device, own, expected):
    assert split_cores(cores, devices, per_device, own) == expected


@pytest.mark.parametrize(
    "mode,layout,trainers,node,expected",
    [
        ("async", GmiLayout(1, 1, 3), 1, 0, [1]),
        ("async", GmiLayout(1, 2, 2), 3, 0, [2, 1]),
        ("async", GmiLayout(2, 1, 2), 1, 1, []),  # no trainer on node 1
        ("sync", GmiLayout(1, 1, 3), 1, 0, []),  # peers: nobody keeps cores
        ("serve", GmiLayout(1, 1, 3), 1, 0, []),
    ],
)
def test_async_trainers_keep_their_own_cores(mode, layout, trainers, node, expected):
    pinned = tuple(range(trainers)) if mode == "async" else ()
    plan = SimpleNamespace(layout=layout, terms=SimpleNamespace(pinned=pinned))
    assert own_cores(plan, node) == expected


def test_the_async_mode_pins_its_trainers_and_the_others_pin_nothing(compose_cfg):
    from isaacgymenvs_gmi.launch import plan_run

    no_gpu = (False, ("cpu",), False)
    for mode, pinned in (("async", (0,)), ("sync", ()), ("serve", ())):
        cfg = compose_cfg("task=Ant", f"gmi.mode={mode}", "gmi.per_gpu=3", "num_envs=64")
        cfg.train.params.config.minibatch_size = 512
        plan = plan_run(cfg, platform=no_gpu)
        assert plan.terms.pinned == pinned, mode
        assert own_cores(plan, 0) == ([1] if pinned else [])


@pytest.mark.parametrize(
    "requested,mode,inventory,expected",
    [
        ("auto", "sync", CPU, "cpu"),
        ("auto", "sync", ONE_GPU, "mps"),
        ("auto", "serve", ONE_GPU, "mps"),  # no MIG instances to serve from
        ("auto", "serve", MIG_GPU, "mig"),
        ("auto", "sync", MIG_GPU, "mps"),  # training GMIs must talk: MPS
        ("auto", "sync", V100, "mps"),
        ("direct", "sync", ONE_GPU, "direct"),
        ("mig", "serve", MIG_GPU, "mig"),
        ("cpu", "sync", ONE_GPU, "cpu"),
    ],
)
def test_choose_backend(requested, mode, inventory, expected):
    assert choose_backend(requested, inventory, MODES[mode].independent_gmis) == expected


@pytest.mark.parametrize(
    "requested,inventory,needle",
    [
        ("mps", CPU, "needs an NVIDIA GPU"),
        ("mig", CPU, "needs an NVIDIA GPU"),
        ("direct", CPU, "needs an NVIDIA GPU"),
        ("mig", ONE_GPU, "no MIG instances"),
        ("mig", V100, "predate MIG"),
    ],
)
def test_impossible_backends(requested, inventory, needle):
    with pytest.raises(ConfigError, match=needle) as err:
        choose_backend(requested, inventory)
    assert "gmi.backend" in str(err.value)


@pytest.mark.parametrize(
    "cfg,inventory,key",
    [
        (dict(num_gpus=3), CPU, "gmi.num_gpus"),  # 3 virtual devices on 2 cores
        (dict(num_gpus=3), TWO_GPUS, "gmi.num_gpus"),
        (dict(per_gpu=MPS_MAX_CLIENTS + 1, backend="mps"), ONE_GPU, "gmi.per_gpu"),
        (dict(per_gpu=4, backend="mig"), MIG_GPU, "gmi.per_gpu"),  # 3 instances only
        (dict(per_gpu=2, backend="mps", sm_percent=[50]), ONE_GPU, "gmi.sm_percent"),
        (dict(per_gpu=2, backend="direct", sm_percent=[50, 50]), ONE_GPU, "gmi.sm_percent"),
    ],
)
def test_impossible_layouts(cfg, inventory, key):
    with pytest.raises(ConfigError) as err:
        node_layout(GmiConfig.from_node(cfg), inventory)
    assert key in str(err.value)


def test_node_layouts_and_mps_shares():
    node = node_layout(GmiConfig.from_node(dict(per_gpu=3)), CPU)
    assert (node.backend, node.devices, node.per_device) == ("cpu", 1, 3)
    node = node_layout(GmiConfig.from_node(dict(per_gpu=2, num_gpus=2)), CPU)
    assert (node.devices, node.per_device) == (2, 2)
    node = node_layout(GmiConfig.from_node(dict(per_gpu=3)), TWO_GPUS)
    assert (node.backend, node.devices) == ("mps", 2)
    even = GmiConfig.from_node(dict(per_gpu=3))
    assert [sm_percent(even, s) for s in range(3)] == [33.33, 33.33, 33.33]
    custom = GmiConfig.from_node(dict(per_gpu=2, sm_percent=[70, 30]))
    assert [sm_percent(custom, s) for s in range(2)] == [70.0, 30.0]


@pytest.mark.parametrize(
    "cores,devices,per_device,expected",
    [
        ([0, 1], 1, 3, [([0, 1], 1)] * 3),  # 3 GMIs on 2 cores: all of them, one thread each
        ([0, 1, 2, 3], 1, 2, [([0, 1, 2, 3], 2)] * 2),
        ([0, 1, 2], 2, 2, [([0, 1], 1), ([0, 1], 1), ([2], 1), ([2], 1)]),  # per device
    ],
)
def test_share_cores_gives_each_gmi_its_device_and_a_share_of_threads(
    cores, devices, per_device, expected
):
    assert share_cores(cores, devices, per_device) == expected


@pytest.mark.parametrize(
    "requested,some_pinned,crowded,expected",
    [
        ("auto", False, True, "shared"),
        ("auto", True, True, "pinned"),  # e.g. async trainers keep their own cores
        ("auto", False, False, "pinned"),
        ("shared", True, False, "shared"),
        ("pinned", False, True, "pinned"),
    ],
)
def test_choose_cores(requested, some_pinned, crowded, expected):
    assert choose_cores(requested, crowded, some_pinned) == expected


def test_gmi_cores_takes_only_its_values():
    assert GmiConfig.from_node({"cores": "shared"}).cores == "shared"
    with pytest.raises(ConfigError) as err:
        GmiConfig.from_node({"cores": "spread"})
    assert err.value.key == "gmi.cores"
