"""A trainer GMI: rl-games' PPO objective on batches from the channels, with advantages and
value targets recomputed by V-trace for the policy that is training now (APPO).
:class:`AsyncPpoAgent` is rl-games' continuous agent whose rollout comes from the batcher
(``play_steps``) and whose ``prepare_dataset`` replaces GAE with V-trace; all else is rl-games'.
"""

from __future__ import annotations

import time
from typing import Any

import torch

from isaacgymenvs_gmi.runners.shared.lockstep import PpoLockstep, ReplicatedPpo, announce
from isaacgymenvs_gmi.runners.shared.stopping import StoppableAgent

from .vtrace import next_values_for, vtrace


class _NoEnv:
    """What rl-games' epoch asks of an env on a trainer, which has none."""

    def set_train_info(self, *args: Any, **kwargs: Any) -> None:
        pass

    def get_env_state(self) -> None:
        return None  # a checkpoint without env state, as rl-games writes for envs without one

    def set_env_state(self, state: Any) -> None:
        pass


def rlgames_batch(batch: dict[str, torch.Tensor], device: str, waited_s: float) -> dict[str, Any]:
    """rl-games' ``play_steps`` layout: (T, N, ...) -> (N*T, ...), env-major. ``waited_s``
    (the time spent waiting for the batch) stands where rl-games puts its env-step time."""

    def flat(t: torch.Tensor) -> torch.Tensor:
        t = t.to(device, non_blocking=True)
        return t.transpose(0, 1).reshape(t.shape[0] * t.shape[1], *t.shape[2:])

    out = {
        "obses": flat(batch["obs"]),
        "actions": flat(batch["actions"]),
        "neglogpacs": flat(batch["neglogp"]),
        "mus": flat(batch["mu"]),
        "sigmas": flat(batch["sigma"]),
        "dones": flat(batch["terminated"] | batch["truncated"]).float(),
        "played_frames": batch["rewards"].numel(),
        "step_time": max(waited_s, 1e-6),
        "_time_major": {k: v.to(device) for k, v in batch.items()},
    }
    if "states" in batch:
        out["states"] = flat(batch["states"])
    return out


class AsyncPpoAgent(ReplicatedPpo, StoppableAgent):
    """``a2c_continuous`` trained from the channels (see the module docstring).

    Args:
        rho_bar, c_bar: V-trace truncation levels.
        anchor: what PPO's ratio, clip and KL are taken against: ``proximal``, the policy as
            the epoch starts (decoupled PPO, Hilton et al. 2021: V-trace already corrects for
            the behaviour policy), or ``behaviour``, the actor's policy mu, as in plain PPO
            (with lagged data it clips more and inflates the KL).
        lockstep: with several trainers, what keeps this one identical with the others;
            None for the only trainer.
    """

    def __init__(
        self,
        base_name,
        params,
        *,
        rho_bar: float = 1.0,
        c_bar: float = 1.0,
        anchor: str = "proximal",
        lockstep: PpoLockstep | None = None,
        **kw,
    ):
        super().__init__(base_name, params, **kw)
        self.rho_bar, self.c_bar, self.anchor = rho_bar, c_bar, anchor
        self._proximal: dict[str, torch.Tensor] = {}
        self.vec_env = _NoEnv()
        self._batch: dict[str, Any] | None = None
        if lockstep is not None:
            announce(lockstep.group, self.replicate(lockstep))
            self.share_initial_weights()

    def feed(self, batch: dict[str, torch.Tensor], waited_s: float = 0.0) -> None:
        """The batch the next epoch trains on (kind -> (T, N, ...) tensors)."""
        self._batch = rlgames_batch(batch, self.ppo_device, waited_s)

    def play_steps(self):
        batch, self._batch = self._batch, None
        if batch is None:
            raise RuntimeError("AsyncPpoAgent.train_epoch without a batch: call feed() first")
        return batch

    def env_reset(self):
        return None

    @torch.no_grad()
    def _current_policy(self, tm: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(T, N) log pi(a|x) - log mu(a|x) and (T, N) V(x) of the current policy and critic
        (normalisers read, not updated); the current policy's -log pi(a|x), mean and std per
        step, env-major, are kept in ``self._proximal`` for the PPO anchor."""
        steps, envs = tm["rewards"].shape
        obs = tm["obs"].reshape(steps * envs, -1)
        self.model.eval()
        actions = tm["actions"].reshape(steps * envs, -1)
        inputs = {"is_train": True, "prev_actions": actions, "rnn_states": None}
        res = self.model({**inputs, "obs": self._preproc_obs(obs)})
        if self.has_central_value:
            values = self.get_central_value(
                {"is_train": False, "states": tm["states"].reshape(steps * envs, -1)}
            )
        else:
            values = self.model.denorm_value(res["values"])
        log_rhos = tm["neglogp"].reshape(-1) - res["prev_neglogp"].reshape(-1)

        def env_major(t: torch.Tensor) -> torch.Tensor:
            t = t.reshape(steps, envs, *t.shape[1:])
            return t.transpose(0, 1).reshape(steps * envs, *t.shape[2:])

        self._proximal = {
            "neglogpacs": env_major(res["prev_neglogp"]),
            "mus": env_major(res["mus"]),
            "sigmas": env_major(res["sigmas"]),
        }
        return log_rhos.view(steps, envs), values.reshape(steps, envs)

    def prepare_dataset(self, batch_dict):
        tm = batch_dict.pop("_time_major")
        log_rhos, values = self._current_policy(tm)
        rewards = self.rewards_shaper(tm["rewards"].unsqueeze(-1)).squeeze(-1)
        stored_next = tm["next_values"]
        done = tm["terminated"] | tm["truncated"]
        next_values = next_values_for(values, stored_next[-1], stored_next, done)
        ends, bars = (tm["terminated"], tm["truncated"]), (self.rho_bar, self.c_bar)
        lam = self.tau  # the train config's GAE lambda
        targets = vtrace(log_rhos, values, next_values, rewards, *ends, self.gamma, *bars, lam=lam)

        def flat(t: torch.Tensor) -> torch.Tensor:
            return t.transpose(0, 1).reshape(-1, 1)

        # rl-games takes advantages = returns - values: hand it values + the V-trace advantage,
        # then put the V-trace value targets in place as the critic's returns.
        batch_dict["values"] = flat(values)
        batch_dict["returns"] = flat(values + targets.advantages)
        if self.anchor == "proximal":  # clip and measure KL against the policy as it is now
            batch_dict.update(self._proximal)
        super().prepare_dataset(batch_dict)  # with several trainers: union advantage moments
        value_targets = flat(targets.values)
        if self.normalize_value:
            value_targets = self.value_mean_std(value_targets)  # eval mode after super()
        self.dataset.values_dict["returns"] = value_targets
        if self.has_central_value:
            self.central_value_net.dataset.values_dict["returns"] = value_targets

    def train_from(self, batch: dict[str, torch.Tensor], waited_s: float) -> tuple[Any, float]:
        """One rl-games epoch on ``batch``; returns rl-games' epoch result and its seconds."""
        self.feed(batch, waited_s)
        self.epoch_num = self.update_epoch()
        start = time.perf_counter()
        result = self.train_epoch()
        self.dataset.update_values_dict(None)
        return result, time.perf_counter() - start
