"""The top-level keys of ``python train.py ...`` and what rl-games' PPO reads from
``train.params.config``, each checked here once, before any process starts (rl-games reads its
numbers deep inside agent construction or at the end of an epoch, and takes ``gamma=5`` without
complaint). ``experiment`` and the rl-games names it fills are folder *names* under
``train_dir``, never paths. Rules between keys are :class:`RunSettings`' methods.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .paths import check_writable_folder
from .schema import (
    POSITIVE,
    Choice,
    EpochLimit,
    Flag,
    Int,
    Name,
    Real,
    Section,
    Settings,
    Text,
    setting,
)

_CONFIG = "train.params.config"
SEED_MAX = 2**32 - 1  # numpy's seeds: every GMI's (seed + its id) must stay within
_NON_NEGATIVE = Real(0.0)
_UNIT = Real(0.0, 1.0, open_low=True)  # a discount or a momentum: (0, 1]
_SCHEDULES = Choice(("adaptive", "linear", "identity"), optional=True)
_MOMENTUM = Real(0.0, 1.0, open_low=True, optional=True)
_SUGGESTIONS = 6


def _ppo(kind: Any, name: str, required: bool = False) -> Any:
    """``train.params.config.<name>``, which rl-games reads."""
    return setting(None, kind, key=f"{_CONFIG}.{name}", required=required)


@dataclass(frozen=True)
class RunSettings(Settings):
    """Validated top-level keys and ``train.params.config`` values, only checked for rl-games'
    numbers; the runtime reads :meth:`train`."""

    seed: int = setting(42, Int(-1, SEED_MAX, why="-1: a random seed"))
    max_iterations: int | None = setting(None, EpochLimit(optional=True))
    test: bool | None = setting(False, Flag(optional=True))
    torch_deterministic: bool | None = setting(False, Flag(optional=True))
    experiment: str | None = setting(None, Name(optional=True))
    full_experiment_name: str | None = setting(None, Name(optional=True))
    train_dir: str = setting("runs", Text("a folder (default: runs)"))
    checkpoint: str | None = setting(None, Text("a checkpoint file", optional=True))
    sigma: float | None = setting(None, Real(optional=True))
    # train.params.config: names that become folders, and the sizes of an epoch
    run_name: str | None = _ppo(Name(optional=True), "name")
    run_folder: str | None = _ppo(Name(optional=True), "full_experiment_name")
    horizon_length: int = _ppo(Int(1), "horizon_length", required=True)
    mini_epochs: int | None = _ppo(Int(1, optional=True), "mini_epochs")
    minibatch_size: int | None = _ppo(Int(1, optional=True), "minibatch_size")
    minibatch_size_per_env: int | None = _ppo(Int(1, optional=True), "minibatch_size_per_env")
    max_epochs: int | None = _ppo(EpochLimit(optional=True), "max_epochs")
    max_frames: int | None = _ppo(EpochLimit(optional=True), "max_frames")
    value_bootstrap: bool | None = _ppo(Flag(optional=True), "value_bootstrap")
    central_value_config: dict | None = _ppo(Section(optional=True), "central_value_config")
    # the numbers PPO needs, and the optional ones (checked when given)
    learning_rate: float = _ppo(POSITIVE, "learning_rate", required=True)
    gamma: float = _ppo(_UNIT, "gamma", required=True)
    tau: float = _ppo(_UNIT, "tau", required=True)
    e_clip: float = _ppo(POSITIVE, "e_clip", required=True)
    critic_coef: float = _ppo(_NON_NEGATIVE, "critic_coef", required=True)
    lr_schedule: str | None = _ppo(_SCHEDULES, "lr_schedule")
    entropy_coef: float | None = _ppo(_NON_NEGATIVE, "entropy_coef")
    grad_norm: float | None = _ppo(POSITIVE, "grad_norm")
    kl_threshold: float | None = _ppo(POSITIVE, "kl_threshold")
    bounds_loss_coef: float | None = _ppo(_NON_NEGATIVE, "bounds_loss_coef")
    weight_decay: float | None = _ppo(_NON_NEGATIVE, "weight_decay")
    adv_rms_momentum: float | None = _ppo(_MOMENTUM, "adv_rms_momentum")
    score_to_win: float | None = _ppo(Real(), "score_to_win")
    # counts rl-games reads with config.get and uses as sizes or periods
    games_to_track: int | None = _ppo(Int(1, optional=True), "games_to_track")
    seq_length: int | None = _ppo(Int(1, optional=True), "seq_length")
    bptt_length: int | None = _ppo(Int(1, optional=True), "bptt_length")
    epochs_between_resets: int | None = _ppo(Int(0, optional=True), "epochs_between_resets")
    save_frequency: int | None = _ppo(Int(0, optional=True), "save_frequency")
    save_best_after: int | None = _ppo(Int(0, optional=True), "save_best_after")
    # names it compares with == and silently ignores when they match none
    schedule_type: str | None = _ppo(Choice(("legacy", "standard")), "schedule_type")
    bound_loss_type: str | None = _ppo(Choice(("bound", "regularisation")), "bound_loss_type")

    def cross_check(self, prefix: str) -> None:
        if self.test and not self.checkpoint:
            raise ConfigError("checkpoint", "", "test=True needs a checkpoint file to play")
        if not self.test:  # playing writes no run folder
            check_writable_folder("train_dir", self.train_dir)

    def check_gmi_seeds(self, seed: int, gmis: int) -> None:
        """GMI ``i`` seeds numpy with ``seed + i``: the last one must stay in numpy's range."""
        if seed + gmis - 1 > SEED_MAX:
            raise ConfigError(
                "seed",
                seed,
                f"must be <= {SEED_MAX - gmis + 1} with {gmis} GMIs (GMI {gmis - 1} seeds with "
                f"seed + {gmis - 1}, numpy's seeds end at {SEED_MAX})",
            )

    def check_batch(self, task_name: str, num_envs: int, *, num_agents: int = 1) -> int:
        """rl-games' batch (``horizon_length * num_envs * num_agents``) splits into whole
        minibatches, and the sizes a trainer needs are given; returns the batch. rl-games
        stops with an assertion deep inside agent construction otherwise."""
        if self.mini_epochs is None:
            raise ConfigError(f"{_CONFIG}.mini_epochs", None, "missing: an integer >= 1")
        batch = self.horizon_length * num_envs * num_agents
        if self.minibatch_size is not None:
            key, given, minibatch = "minibatch_size", self.minibatch_size, self.minibatch_size
        elif self.minibatch_size_per_env is not None:
            key, given = "minibatch_size_per_env", self.minibatch_size_per_env
            minibatch = given * num_envs
        else:
            raise ConfigError(
                f"{_CONFIG}.minibatch_size", None, "missing; set minibatch_size or "
                "minibatch_size_per_env"
            )  # fmt: skip
        if batch % minibatch:
            near = ", ".join(str(d) for d in divisors_near(batch, minibatch, _SUGGESTIONS))
            raise ConfigError(
                f"{_CONFIG}.{key}",
                given,
                f"{task_name}: the minibatch ({minibatch}) must divide the rl-games batch "
                f"horizon_length * num_actors * num_agents = {self.horizon_length} * "
                f"{num_envs} * {num_agents} = {batch}; minibatch sizes that divide {batch} "
                f"near {minibatch}: {near}",
            )
        return batch

    def train(self) -> TrainSettings:
        """What the runtime reads of these."""
        return TrainSettings(
            horizon_length=self.horizon_length,
            torch_deterministic=bool(self.torch_deterministic),
            sigma=self.sigma,
            central_value=self.central_value_config is not None,
            experiment_name=self.full_experiment_name,
            train_dir=self.train_dir,
            value_bootstrap=bool(self.value_bootstrap),
        )


@dataclass(frozen=True)
class TrainSettings:
    """What the runtime reads of the training settings (from :meth:`RunSettings.train`):
    ``horizon_length`` (env steps per GMI per epoch), ``torch_deterministic``, ``sigma`` (fixed
    policy std for a loaded checkpoint; ``None``: the network's), ``central_value`` (the train
    config has an asymmetric critic net), ``experiment_name`` (``full_experiment_name``;
    ``None``: rl-games'), ``train_dir``, ``value_bootstrap`` (time-outs are truncations whose
    value is bootstrapped, as rl-games reads it)."""

    horizon_length: int
    torch_deterministic: bool
    sigma: float | None
    central_value: bool
    experiment_name: str | None
    train_dir: str
    value_bootstrap: bool = False


def divisors_near(n: int, target: int, count: int) -> list[int]:
    """The ``count`` divisors of ``n`` closest to ``target``, in increasing order."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    divisors = sorted(set(small + [n // d for d in small]))
    closest = sorted(divisors, key=lambda d: (abs(d - target), d))[:count]
    return sorted(closest)
