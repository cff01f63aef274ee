"""What modes whose GMIs play the policy step by step (async, serve) need of the train config."""

from __future__ import annotations

from isaacgymenvs_gmi.config import ConfigError


def check_actor_config(mode: str, train_params: dict) -> None:
    """Refuses, naming the key, a train config ``mode``'s actors cannot play."""
    algo = train_params.get("algo", {}).get("name")
    if algo != "a2c_continuous":
        raise ConfigError(
            "train.params.algo.name", algo, f"{mode} mode runs a2c_continuous configs only"
        )
    if train_params.get("network", {}).get("rnn"):
        raise ConfigError(
            "train.params.network.rnn",
            "set",
            f"recurrent policies are not supported in {mode} mode (chunks of experience carry "
            "no per-step policy state); use gmi.mode=sync",
        )
