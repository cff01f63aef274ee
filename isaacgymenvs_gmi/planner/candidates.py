"""The planner's search space and what each candidate changes in the user's config.

- ``gmi.per_gpu=auto`` with a number of envs: the config's envs are the device's total (as
  IsaacGymEnvs runs one process per GPU), split evenly among its GMIs; ``minibatch_size``
  follows the split so every epoch keeps the config's number of minibatches.
- ``num_envs=auto`` (the paper's free search): envs per GMI grow through powers of two in
  ``[gmi.plan.min_envs, gmi.plan.max_envs]``, each with the config's minibatches per epoch.

On a CPU device with fewer cores than GMIs, a shape is tried with its GMIs on disjoint core sets
(``pinned``) and sharing the cores (``shared``), unless ``gmi.cores`` fixes one.
"""

from __future__ import annotations

from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf, open_dict

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.config.plan import PlanSettings

from .search import Candidate, Shape

GPU_MAX_PER_GPU = 10  # the paper's range of GMIs per GPU
MB_KEY = "train.params.config.minibatch_size"


@dataclass(frozen=True)
class Request:
    """What the user left to the planner, and the fixed parts of the problem."""

    per_gpu: int | None  # GMIs per device, or None to search it
    total_envs: int | None  # envs per device to split among its GMIs; None: the free search
    horizon: int  # horizon_length
    minibatches: int | None  # per epoch; None: sized per env (minibatch_size_per_env)
    cores: str = "auto"  # gmi.cores as given

    @property
    def free(self) -> bool:
        return self.total_envs is None

    def splits(self, envs: int) -> bool:
        """A GMI of ``envs`` envs has a batch that splits into the config's minibatches."""
        return self.minibatches is None or (self.horizon * envs) % self.minibatches == 0

    def minibatch_size(self, envs: int) -> int | None:
        """``minibatch_size`` for a GMI of ``envs`` envs (None: sized per env, kept)."""
        return None if self.minibatches is None else self.horizon * envs // self.minibatches


def split_envs(total: int, per_gpu: int, horizon: int, minibatches: int | None) -> int | None:
    """Envs per GMI for ``per_gpu`` GMIs sharing ``total``: the largest count <= total/per_gpu
    whose batch (``horizon`` x envs) splits into ``minibatches``; None if there is none."""
    fits = Request(per_gpu, total, horizon, minibatches).splits
    return next((envs for envs in range(total // per_gpu, 0, -1) if fits(envs)), None)


def env_grid(settings: PlanSettings) -> tuple[int, ...]:
    """Powers of two from ``min_envs`` to ``max_envs`` (both included when powers of two)."""
    powers = (2**k for k in range(settings.max_envs.bit_length()))
    return tuple(n for n in powers if n >= settings.min_envs) or (settings.min_envs,)


def max_per_gpu(settings: PlanSettings, *, gpu: bool, device_cores: int) -> int:
    if settings.max_per_gpu is not None:
        return settings.max_per_gpu
    return GPU_MAX_PER_GPU if gpu else max(1, 2 * device_cores)


def shapes(
    request: Request, settings: PlanSettings, *, gpu: bool, device_cores: int
) -> list[Shape]:
    """Every shape to search, most GMIs first."""
    most = max_per_gpu(settings, gpu=gpu, device_cores=device_cores)
    counts = [request.per_gpu] if request.per_gpu is not None else range(most, 0, -1)
    out = []
    for k in counts:
        if request.free:
            envs = tuple(n for n in env_grid(settings) if request.splits(n))
        else:
            one = split_envs(request.total_envs, k, request.horizon, request.minibatches)
            envs = () if one is None else (one,)
        if not envs:
            continue
        crowded = not gpu and k > device_cores
        placements = (
            ("pinned", "shared") if crowded and request.cores == "auto" else (request.cores,)
        )
        out += [Shape(k, envs, cores) for cores in placements]
    return out


def apply(cfg: DictConfig, cand: Candidate, request: Request) -> DictConfig:
    """A copy of ``cfg`` that runs ``cand``: its GMIs, envs, placement and minibatch."""
    out = OmegaConf.create(OmegaConf.to_container(cfg, resolve=False))
    with open_dict(out):
        out.gmi.per_gpu = cand.per_gpu
        out.num_envs = cand.num_envs
        out.task.env.numEnvs = cand.num_envs
        if cand.cores != "auto":
            out.gmi.cores = cand.cores
        minibatch = request.minibatch_size(cand.num_envs)
        if minibatch is not None:
            OmegaConf.update(out, MB_KEY, minibatch, merge=False)
    return out


def minibatches_of(train_config: dict, horizon: int, envs: int) -> int | None:
    """Minibatches per epoch the train config gives for ``envs`` envs in one process (None when
    it sizes minibatches per env)."""
    if train_config.get("minibatch_size") is None:
        return None
    minibatch = int(train_config["minibatch_size"])
    batch = horizon * envs
    if batch % minibatch:
        raise ConfigError(
            MB_KEY, minibatch, f"must divide the batch horizon_length * num_envs = {batch}"
        )
    return batch // minibatch
