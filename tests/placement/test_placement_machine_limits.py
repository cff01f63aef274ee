"""Upper bounds from the machine, with fake machine facts."""

from __future__ import annotations

import pytest

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.placement.machine_limits import (
    GMI_BASE_BYTES,
    GMIS_PER_CORE,
    EnvFootprint,
    available_memory,
    check_env_memory,
    check_gmi_count,
)

GIB = 2**30
ANT = EnvFootprint(physics_values=60, obs=60, states=0, actions=8, horizon=16)


def test_an_env_estimate_counts_physics_buffers_and_one_rollout():
    assert ANT.bytes == 8 * 2 * 60 + 4 * 2 * 68 + 4 * 16 * (60 + 24 + 5)


def test_gmis_are_bounded_by_cores_on_cpu_only():
    check_gmi_count(GMIS_PER_CORE * 2, cores=2, memory=64 * GIB, cpu_backend=True)
    with pytest.raises(ConfigError, match=r"9 GMIs on 2 cores: at most 4 per core \(8 here\)"):
        check_gmi_count(9, cores=2, memory=64 * GIB, cpu_backend=True)
    check_gmi_count(9, cores=2, memory=64 * GIB, cpu_backend=False)  # GPU GMIs: MPS limit elsewhere


def test_gmis_are_bounded_by_memory_with_the_numbers():
    with pytest.raises(ConfigError, match="at most 4 fit") as refused:
        check_gmi_count(6, cores=64, memory=2 * GIB, cpu_backend=True)
    assert refused.value.key == "gmi.per_gpu" and "2.0 GiB is available" in str(refused.value)


def test_envs_are_bounded_by_memory_and_the_error_says_how_many_fit():
    memory = 8 * GIB
    check_env_memory(4096, 3, ANT, memory, "task.env.numEnvs")  # Ant's default on 8 GB
    with pytest.raises(ConfigError) as refused:
        check_env_memory(10**9, 1, ANT, memory, "num_envs")
    fits = int((0.9 * memory - GMI_BASE_BYTES) // ANT.bytes)
    assert refused.value.key == "num_envs" and f"at most {fits:,} envs per GMI fit" in str(
        refused.value
    )


def test_available_memory_is_read_from_the_kernel():
    assert 0 < available_memory() < 2**50
