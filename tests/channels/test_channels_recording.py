"""Recording a serving run's experience: sharded writes, manifest merge, loading back."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch

from isaacgymenvs_gmi.channels import recording as rec_mod
from isaacgymenvs_gmi.channels.recording import (
    FORMAT,
    ExperienceRecorder,
    RecordingError,
    load_gmi,
    load_recording,
    merge_manifests,
)

KINDS = {
    "obs": ((3,), "float32"),
    "rewards": ((), "float32"),
    "version": ((), "int64"),
    "terminated": ((), "bool"),
}
ENVS = [2, 3, 1]  # per GMI
CHUNKS = [3, 5, 1, 4]  # steps per chunk: 13 steps, shards of 4 -> 4, 4, 4, 1
SHARD = 4


def chunk(rng: np.random.Generator, t: int, n: int, version: int) -> dict[str, np.ndarray]:
    return {
        "obs": rng.standard_normal((t, n, 3)).astype(np.float32),
        "rewards": rng.standard_normal((t, n)).astype(np.float32),
        "version": np.full((t, n), version, dtype=np.int64),
        "terminated": rng.random((t, n)) < 0.3,
    }


def record(folder, envs=ENVS, chunks=CHUNKS, as_torch=False):
    """Record with one recorder per GMI; return the expected per-GMI arrays (steps, N, ...)."""
    rng = np.random.default_rng(0)
    expected = []
    for g, n in enumerate(envs):
        written = []
        with ExperienceRecorder(
            str(folder), gmi=g, num_envs=n, kinds=KINDS, shard_steps=SHARD, meta={"task": "Ant"}
        ) as r:
            for i, t in enumerate(chunks):
                c = chunk(rng, t, n, version=10 * g + i)
                written.append({k: v.copy() for k, v in c.items()})
                r.write(
                    {k: torch.from_numpy(v) for k, v in c.items()} if as_torch else c,
                    policy_version=10 * g + i,
                )
                for v in c.values():  # the recorder must have copied what it buffers
                    v[...] = 0
        expected.append({k: np.concatenate([w[k] for w in written]) for k in KINDS})
    return expected


def test_round_trip_values_shards_and_manifest(tmp_path):
    expected = record(tmp_path, as_torch=True)
    merged = merge_manifests(str(tmp_path), expected_gmis=3)
    steps = sum(CHUNKS)

    shards = sorted(f for f in os.listdir(tmp_path) if f.endswith(".npz"))
    assert shards == [f"gmi{g:03d}-shard{k:05d}.npz" for g in range(3) for k in range(4)]
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert merged == json.loads((tmp_path / "manifest.json").read_text())
    assert merged["format"] == FORMAT
    assert merged["kinds"] == {
        "obs": {"shape": [3], "dtype": "float32"},
        "rewards": {"shape": [], "dtype": "float32"},
        "version": {"shape": [], "dtype": "int64"},
        "terminated": {"shape": [], "dtype": "bool"},
    }
    assert [p["gmi"] for p in merged["gmis"]] == [0, 1, 2]
    assert merged["num_envs"] == sum(ENVS) and merged["steps"] == steps
    assert merged["transitions"] == steps * sum(ENVS)
    assert merged["policy_version"] == {"min": 0, "max": 23}
    assert merged["meta"] == {"task": "Ant"}
    for g, part in enumerate(merged["gmis"]):
        assert [s["steps"] for s in part["shards"]] == [4, 4, 4, 1]
        assert part["steps"] == steps and part["transitions"] == steps * ENVS[g]
        assert part["policy_version"] == {"min": 10 * g, "max": 10 * g + 3}
        assert all(len(s["sha256"]) == 64 for s in part["shards"])

    loaded = load_recording(str(tmp_path))
    assert loaded.transitions() == merged["transitions"]
    for k, (shape, dtype) in KINDS.items():
        arr = loaded.arrays[k]
        assert arr.shape == (steps, sum(ENVS), *shape) and arr.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(arr, np.concatenate([e[k] for e in expected], axis=1))
    # GMI 1's envs sit at columns 2..4, and carry GMI 1's versions
    np.testing.assert_array_equal(loaded.arrays["version"][:3, 2:5], 10)
    for g in range(3):
        one = load_gmi(str(tmp_path), g)
        for k in KINDS:
            np.testing.assert_array_equal(one[k], expected[g][k])


def test_load_kinds_subset(tmp_path):
    expected = record(tmp_path, envs=[2, 3])
    merge_manifests(str(tmp_path))
    loaded = load_recording(str(tmp_path), kinds=["rewards", "terminated"])
    assert set(loaded.arrays) == {"rewards", "terminated"}
    np.testing.assert_array_equal(
        loaded.arrays["terminated"], np.concatenate([e["terminated"] for e in expected], axis=1)
    )
    assert loaded.transitions() == sum(CHUNKS) * 5
    with pytest.raises(ValueError, match="actions"):
        load_recording(str(tmp_path), kinds=["actions"])


def test_unequal_steps_need_load_gmi(tmp_path):
    record(tmp_path / "a", envs=[2], chunks=[5])
    expected = record(tmp_path / "b", envs=[2, 3], chunks=[2])
    for f in os.listdir(tmp_path / "a"):  # GMI 0 with 5 steps next to GMI 1 with 2
        os.replace(tmp_path / "a" / f, tmp_path / "b" / f)
    merged = merge_manifests(str(tmp_path / "b"), expected_gmis=2)
    assert merged["steps"] is None and merged["transitions"] == 5 * 2 + 2 * 3
    with pytest.raises(RecordingError, match="different step counts.*load_gmi"):
        load_recording(str(tmp_path / "b"))
    np.testing.assert_array_equal(load_gmi(str(tmp_path / "b"), 1)["obs"], expected[1]["obs"])
    assert load_gmi(str(tmp_path / "b"), 0)["obs"].shape == (5, 2, 3)


def test_missing_part_manifest_names_the_gmi(tmp_path):
    record(tmp_path)
    os.remove(tmp_path / "gmi001-manifest.json")
    with pytest.raises(RecordingError, match=r"GMIs \[1\]"):
        merge_manifests(str(tmp_path), expected_gmis=3)
    with pytest.raises(RecordingError, match=r"GMIs \[1, 3\]"):
        merge_manifests(str(tmp_path), expected_gmis=4)
    assert not (tmp_path / "manifest.json").exists()


def test_missing_manifest(tmp_path):
    record(tmp_path, envs=[1])
    with pytest.raises(RecordingError, match="manifest.json"):
        load_recording(str(tmp_path))


def test_corrupted_shard_fails_checksum(tmp_path):
    record(tmp_path)
    merge_manifests(str(tmp_path))
    path = tmp_path / "gmi002-shard00001.npz"
    data = bytearray(path.read_bytes())
    data[-200] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match="gmi002-shard00001.npz.*sha256"):
        load_recording(str(tmp_path))
    load_gmi(str(tmp_path), 1)  # other GMIs are intact


def test_deleted_shard_named(tmp_path):
    record(tmp_path)
    merge_manifests(str(tmp_path))
    os.remove(tmp_path / "gmi001-shard00003.npz")
    with pytest.raises(RecordingError, match="gmi001-shard00003.npz"):
        load_recording(str(tmp_path), verify=False)


def test_step_count_mismatch_named(tmp_path):
    record(tmp_path, envs=[2])
    manifest = merge_manifests(str(tmp_path))
    shards = manifest["gmis"][0]["shards"]
    shards[0]["steps"] = 3
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RecordingError, match="GMI 0.*13"):
        load_recording(str(tmp_path), verify=False)
    shards[3]["steps"] = 2  # the total is right again, shard 0 is not
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RecordingError, match=r"gmi000-shard00000.npz.*\(4, 2\).*\(3, 2\)"):
        load_recording(str(tmp_path), kinds=["rewards"], verify=False)


def test_bad_chunks_name_the_kind(tmp_path):
    r = ExperienceRecorder(str(tmp_path), gmi=0, num_envs=2, kinds=KINDS, shard_steps=SHARD)
    good = chunk(np.random.default_rng(1), 2, 2, 0)
    with pytest.raises(ValueError, match=r"'obs'.*\('T', 2, 3\).*\(2, 2, 4\)"):
        r.write({**good, "obs": np.zeros((2, 2, 4), np.float32)}, policy_version=0)
    with pytest.raises(ValueError, match="'rewards'.*\\('T', 2\\).*\\(2, 3\\)"):
        r.write({**good, "rewards": np.zeros((2, 3), np.float32)}, policy_version=0)
    with pytest.raises(ValueError, match="lacks kind 'version'"):
        r.write({k: v for k, v in good.items() if k != "version"}, policy_version=0)
    with pytest.raises(ValueError, match="actions"):
        r.write({**good, "actions": np.zeros((2, 2))}, policy_version=0)
    with pytest.raises(ValueError, match="'version'.*float64"):
        r.write({**good, "version": np.zeros((2, 2))}, policy_version=0)
    r.write(good, policy_version=7)
    part = r.close()
    assert r.close() is part  # idempotent
    assert part["steps"] == 2 and part["policy_version"] == {"min": 7, "max": 7}
    with pytest.raises(RecordingError, match="closed"):
        r.write(good, policy_version=8)


def test_exception_leaves_no_part_manifest_nor_temp_files(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    with (
        pytest.raises(KeyError),
        ExperienceRecorder(str(tmp_path), gmi=4, num_envs=2, kinds=KINDS, shard_steps=SHARD) as r,
    ):
        r.write(chunk(rng, 6, 2, 0), policy_version=0)
        (tmp_path / ".gmi004-shard00001.npz.abc.tmp").write_bytes(b"half a shard")
        raise KeyError("boom")
    assert sorted(os.listdir(tmp_path)) == ["gmi004-shard00000.npz"]

    def failing_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(rec_mod.os, "replace", failing_replace)
    with (
        pytest.raises(OSError, match="disk full"),
        ExperienceRecorder(str(tmp_path), gmi=5, num_envs=2, kinds=KINDS, shard_steps=SHARD) as r,
    ):
        r.write(chunk(rng, 4, 2, 0), policy_version=0)
    assert sorted(os.listdir(tmp_path)) == ["gmi004-shard00000.npz"]


def test_refuses_folder_with_files_of_the_gmi(tmp_path):
    record(tmp_path, envs=[1])
    with pytest.raises(RecordingError, match="GMI 0"):
        ExperienceRecorder(str(tmp_path), gmi=0, num_envs=1, kinds=KINDS)
    ExperienceRecorder(str(tmp_path), gmi=1, num_envs=1, kinds=KINDS).close()
    assert merge_manifests(str(tmp_path), expected_gmis=2)["steps"] is None
