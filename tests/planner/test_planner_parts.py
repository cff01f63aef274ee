"""The planner's pure parts: the search space, what a candidate changes in the config, the
projection, the cache key, and bad requests refused before anything starts."""

from __future__ import annotations

import io
import json

import pytest

from isaacgymenvs_gmi.comm.cost_model import reduction_time
from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.plan import PlanSettings
from isaacgymenvs_gmi.placement.inventory import GpuInfo, Inventory
from isaacgymenvs_gmi.planner.cache import PlanCache, fingerprint, train_config_hash
from isaacgymenvs_gmi.planner.candidates import Request, apply, env_grid, shapes, split_envs
from isaacgymenvs_gmi.planner.projection import (
    INTER_DEVICE_BPS,
    INTRA_DEVICE_BPS,
    Projection,
    mlp_parameters,
)
from isaacgymenvs_gmi.planner.resolve import check_request
from isaacgymenvs_gmi.planner.search import Candidate, Profile, Shape


@pytest.mark.parametrize(
    ("total", "k", "minibatches", "want"),
    [
        (4096, 1, 2, 4096),
        (4096, 3, 2, 1365),  # 16 x 1365 = 21840 splits in two
        (4096, 3, 32, 1364),  # 16 x 1365 does not split in 32; 16 x 1364 does
        (1536, 4, None, 384),  # minibatches sized per env: any count
        (3, 4, None, None),  # fewer envs than GMIs
    ],
)
def test_split_keeps_the_total_and_the_minibatches(total, k, minibatches, want):
    assert split_envs(total, k, 16, minibatches) == want


def test_the_free_grid_is_the_papers_powers_of_two():
    assert env_grid(PlanSettings()) == (128, 256, 512, 1024, 2048, 4096, 8192, 16384)
    assert env_grid(PlanSettings(min_envs=100, max_envs=600)) == (128, 256, 512)


def test_shapes_try_both_placements_only_on_crowded_cpu_devices():
    req = Request(per_gpu=None, total_envs=1536, horizon=16, minibatches=2)
    got = shapes(req, PlanSettings(), gpu=False, device_cores=2)
    assert [(s.per_gpu, s.cores, s.envs) for s in got] == [
        (4, "pinned", (384,)),
        (4, "shared", (384,)),
        (3, "pinned", (512,)),
        (3, "shared", (512,)),
        (2, "auto", (768,)),
        (1, "auto", (1536,)),
    ]
    given = Request(None, 1536, 16, 2, cores="shared")
    fixed = shapes(given, PlanSettings(), gpu=False, device_cores=2)
    assert [(s.per_gpu, s.cores) for s in fixed] == [(k, "shared") for k in (4, 3, 2, 1)]
    gpu = shapes(req, PlanSettings(), gpu=True, device_cores=16)
    assert [s.per_gpu for s in gpu] == list(range(10, 0, -1))
    free = shapes(Request(2, None, 16, 2), PlanSettings(max_envs=1024), gpu=False, device_cores=2)
    assert free == [Shape(2, (128, 256, 512, 1024))]


def test_a_candidate_sets_gmis_envs_placement_and_minibatch(compose_cfg):
    cfg = compose_cfg("task=Ant", "gmi.per_gpu=auto")
    req = Request(per_gpu=None, total_envs=4096, horizon=16, minibatches=2)
    out = apply(cfg, Candidate(3, 1365, "shared"), req)
    assert (out.gmi.per_gpu, out.num_envs, out.task.env.numEnvs) == (3, 1365, 1365)
    assert out.gmi.cores == "shared"
    assert out.train.params.config.minibatch_size == 16 * 1365 // 2
    assert cfg.gmi.per_gpu == "auto"  # the user's config is left as it was


def test_the_projection_charges_cross_device_reduction_per_update():
    proj = Projection(devices=2, gpu=False, horizon=16, updates_per_epoch=8, model_bytes=4e6)
    cand, prof = Candidate(2, 1024), Profile(True, 32768.0, 1000.0)
    t_epoch = 16 * 1024 * 2 / 32768.0  # 1 s
    # MPL [[0, 1], [2, 3]]: Algorithm 1 picks MRR; the trial already paid MPR inside a device
    extra = 8 * (
        reduction_time("mrr", 2, 2, 4e6, INTRA_DEVICE_BPS, INTER_DEVICE_BPS[False])
        - reduction_time("mpr", 1, 2, 4e6, INTRA_DEVICE_BPS, INTER_DEVICE_BPS[False])
    )
    # our MRR: the ring across the 2 devices (B_2) plus the meeting inside each (B_1, already paid)
    assert extra == pytest.approx(8 * (4e6 / 1e9))
    assert proj(cand, prof) == pytest.approx(32768.0 * 2 * t_epoch / (t_epoch + extra))
    one = Projection(devices=1, gpu=False, horizon=16, updates_per_epoch=8, model_bytes=4e6)
    assert one(cand, prof) == 32768.0  # one device: what the trial measured


def test_mlp_parameters_count_trunk_heads_and_sigma():
    net = {"mlp": {"units": [256, 128, 64]}, "separate": False}
    trunk = 60 * 256 + 256 + 256 * 128 + 128 + 128 * 64 + 64
    assert mlp_parameters(60, 8, net) == trunk + (64 * 8 + 8) + (64 + 1) + 8


def _cache(tmp_path, identity=None, inventory=None) -> PlanCache:
    return PlanCache(
        tmp_path, "Ant", identity or {"train": "abc"}, fingerprint(inventory or Inventory())
    )


def test_the_cache_round_trips_and_refuses_other_machines(tmp_path):
    cache = _cache(tmp_path)
    assert cache.load() is None
    cache.store({"best": {"per_gpu": 2}})
    assert _cache(tmp_path).load() == {"best": {"per_gpu": 2}}
    assert _cache(tmp_path, identity={"train": "abd"}).load() is None
    gpu = GpuInfo(0, "NVIDIA H100", "GPU-1", (9, 0), 80 * 2**30, 132, False)
    assert _cache(tmp_path, inventory=Inventory(gpus=(gpu,))).load() is None
    # an entry whose stored fingerprint differs is not trusted even under the same file name
    entry = json.loads(cache.path.read_text())
    entry["fingerprint"]["cpu"] = "another CPU"
    cache.path.write_text(json.dumps(entry))
    assert _cache(tmp_path).load() is None
    cache.path.write_text("{not json")
    assert _cache(tmp_path).load() is None


def test_the_train_config_hash_ignores_run_length_and_names():
    base = {"config": {"gamma": 0.99, "max_epochs": 100, "name": "Ant"}, "network": {}}
    same = {"config": {"gamma": 0.99, "max_epochs": 5, "name": "Other"}, "network": {}}
    other = {"config": {"gamma": 0.98, "max_epochs": 100, "name": "Ant"}, "network": {}}
    assert train_config_hash(base) == train_config_hash(same) != train_config_hash(other)


def test_auto_under_torchrun_is_refused(compose_cfg, monkeypatch):
    for var, value in {
        "TORCHELASTIC_RUN_ID": "x",
        "LOCAL_WORLD_SIZE": "2",
        "WORLD_SIZE": "2",
    }.items():
        monkeypatch.setenv(var, value)
    with pytest.raises(ConfigError, match="torchrun") as err:
        check_request(compose_cfg("task=Cartpole", "gmi.per_gpu=auto"))
    assert err.value.key == "gmi.per_gpu"


def test_planning_auto_directly_says_where_auto_is_resolved(compose_cfg):
    from isaacgymenvs_gmi.launch import plan_run

    with pytest.raises(ConfigError, match="resolve_auto"):
        plan_run(compose_cfg("task=Cartpole", "gmi.per_gpu=auto"))


def test_a_search_where_nothing_runs_fails_with_the_table(compose_cfg, tmp_path):
    from isaacgymenvs_gmi.planner import NoRunnableCandidate, choose

    cfg = compose_cfg("task=Cartpole", "gmi.per_gpu=auto", f"gmi.plan.cache_dir={tmp_path}")
    with pytest.raises(NoRunnableCandidate, match="per_gpu=1 num_envs=512") as err:
        choose(cfg, profiler=lambda c, s: Profile.failed("crash: no", 0.1), stream=io.StringIO())
    assert "not runnable: crash: no" in str(err.value)
    assert not any(tmp_path.iterdir())  # nothing cached: the next run searches again
