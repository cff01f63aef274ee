"""Upper bounds from the machine, checked before any GMI starts (pure; facts passed in).

- GMIs per node against cores (at most :data:`GMIS_PER_CORE` per usable core for CPU GMIs) and
  memory (:data:`GMI_BASE_BYTES` per GMI process, a lower bound of the 474 MB measured with
  torch, JAX, MuJoCo and rl-games imported).
- Envs against memory: a lower bound of one env's bytes (float64 MuJoCo state, float32
  observation/action buffers and one rollout of transitions).

Each error gives what was asked, the estimate, what the machine has, and what fits.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from isaacgymenvs_gmi.config.errors import ConfigError

GMIS_PER_CORE = 4
GMI_BASE_BYTES = 400 * 2**20
MEMORY_SHARE = 0.9  # of the available memory a run may plan to use


@dataclass(frozen=True)
class EnvFootprint:
    """What one env holds, per GMI (lower bound): ``physics_values`` float64 values of MuJoCo
    state, tensor widths, ``horizon`` transitions kept per epoch."""

    physics_values: int
    obs: int
    states: int
    actions: int
    horizon: int

    @property
    def bytes(self) -> int:
        physics = 8 * 2 * self.physics_values  # state, and the copy stepped from it
        io = 4 * 2 * (self.obs + self.states + self.actions)  # host and learner buffers
        # per transition: obs, states, actions, mean, sigma, neglogp, value, reward, done, return
        rollout = 4 * self.horizon * (self.obs + self.states + 3 * self.actions + 5)
        return physics + io + rollout


def available_memory() -> int:
    """Bytes the kernel says can be allocated without swapping (``MemAvailable``)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")


def _gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB"


def check_gmi_count(gmis_per_node: int, cores: int, memory: int, *, cpu_backend: bool) -> None:
    """Raise a ConfigError on ``gmi.per_gpu`` when this node cannot hold its GMIs."""
    if cpu_backend and gmis_per_node > GMIS_PER_CORE * cores:
        raise ConfigError(
            "gmi.per_gpu",
            gmis_per_node,
            f"{gmis_per_node} GMIs on {cores} cores: at most {GMIS_PER_CORE} per core "
            f"({GMIS_PER_CORE * cores} here)",
        )
    budget = MEMORY_SHARE * memory
    if gmis_per_node * GMI_BASE_BYTES > budget:
        fits = max(1, int(budget // GMI_BASE_BYTES))
        raise ConfigError(
            "gmi.per_gpu",
            gmis_per_node,
            f"{gmis_per_node} GMI processes need at least {_gib(gmis_per_node * GMI_BASE_BYTES)}"
            f" ({GMI_BASE_BYTES >> 20} MiB each), {_gib(memory)} is available: at most "
            f"{fits} fit",
        )


def check_env_memory(
    num_envs: int, gmis_per_node: int, env: EnvFootprint, memory: int, key: str
) -> None:
    """Raise a ConfigError on ``key`` (the env count's key) when the envs cannot fit."""
    per_env = env.bytes
    budget = MEMORY_SHARE * memory - gmis_per_node * GMI_BASE_BYTES
    need = num_envs * gmis_per_node * per_env
    if need > budget:
        fits = max(0, int(budget // (gmis_per_node * per_env)))
        raise ConfigError(
            key,
            num_envs,
            f"{num_envs:,} envs x {gmis_per_node} GMI(s) need at least {_gib(need)} "
            f"(~{per_env / 1024:.1f} KiB per env), {_gib(memory)} is available: at most "
            f"{fits:,} envs per GMI fit",
        )
