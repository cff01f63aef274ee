"""rl-games' names and switches in ``train.params`` are checked before any process starts,
against rl-games' own registries (networks and models registered at run time included)."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from omegaconf import OmegaConf
from rl_games.algos_torch import model_builder
from rl_games.algos_torch.network_builder import A2CBuilder, NetworkBuilder

from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.rl.train_names import check_rlgames_names
from tests.helpers import assert_ok

TRAIN_DIR = Path(__file__).resolve().parents[2] / "cfg" / "train"
TRAIN_FILES = sorted(TRAIN_DIR.glob("*.yaml"))


def train_params(path: Path) -> dict[str, Any]:
    """``train.params`` as written (``${...}`` interpolations left unresolved)."""
    return OmegaConf.to_container(OmegaConf.load(path), resolve=False)["params"]


def ant() -> dict[str, Any]:
    params = train_params(TRAIN_DIR / "AntPPO.yaml")
    network, model = copy.deepcopy(params["network"]), {"name": "central_value"}
    params["config"]["central_value_config"] = {"network": network, "model": model}
    return params


def with_value(params: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    *parents, last = dotted.split(".")
    node = params
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    return params


def allowed(error: ConfigError) -> list[str]:
    """The quoted names a refusal lists (before its closing remark in parentheses)."""
    return re.findall(r"'([^']*)'", error.constraint.split(" (")[0])


CV = "config.central_value_config"
BAD = [  # (dotted key under train.params, value, a name or phrase the refusal must list)
    ("algo.name", "bogus", "a2c_continuous"),
    ("model.name", "bogus", "continuous_a2c_logstd"),
    ("network.name", "bogus", "actor_critic"),
    ("network.mlp.activation", "bogus", "elu"),
    ("network.mlp.activation", None, "None"),
    ("network.mlp.activation", "ReLU", "relu"),
    ("network.space.continuous.mu_activation", "bogus", "tanh"),
    ("network.space.continuous.sigma_activation", "bogus", "softplus"),
    ("network.value_activation", "bogus", "swish"),
    ("network.cnn.activation", "bogus", "gelu"),
    ("network.mlp.initializer.name", "bogus", "orthogonal_initializer"),
    ("network.space.continuous.mu_init.name", "bogus", "default"),
    ("network.space.continuous.sigma_init.name", "bogus", "const_initializer"),
    ("network.rnn.name", "bogus", "lstm"),
    ("config.reward_shaper.scale_value", "abc", "a finite number"),
    ("config.reward_shaper.shift_value", "1", "a finite number"),
    ("config.reward_shaper.min_val", True, "a finite number"),
    ("config.reward_shaper.max_val", "abc", "a finite number"),
    ("config.reward_shaper.log_val", "abc", "true or false"),
    ("config.reward_shaper.scale", 0.01, "scale_value"),
    ("config.normalize_input", "abc", "true or false"),
    ("config.normalize_value", "False", "true or false"),
    ("config.normalize_advantage", 1, "true or false"),
    ("config.value_bootstrap", "abc", "true or false"),
    ("config.mixed_precision", "abc", "true or false"),
    (f"{CV}.model.name", "bogus", "central_value"),
    (f"{CV}.network.name", "bogus", "actor_critic"),
    (f"{CV}.network.mlp.activation", "bogus", "elu"),
    (f"{CV}.truncate_grads", "abc", "true or false"),
]


@pytest.mark.parametrize("dotted, value, listed", BAD, ids=[f"{k}={v!r}" for k, v, _ in BAD])
def test_a_bad_value_is_refused_naming_its_key_and_what_is_allowed(dotted, value, listed):
    with pytest.raises(ConfigError) as caught:
        check_rlgames_names(with_value(ant(), dotted, value))
    error = caught.value
    assert (error.key, error.value) == (f"train.params.{dotted}", value)
    assert str(error).startswith(f"train.params.{dotted}=")
    if " one of " in error.constraint:
        assert listed in allowed(error)
    else:
        assert listed in error.constraint


@pytest.mark.parametrize(
    "dotted, value",
    [
        ("network.mlp.initializer", "orthogonal"),  # rl-games unpacks it: a mapping
        ("network.mlp.initializer.name", None),
        ("config.reward_shaper", 0.01),
    ],
)
def test_a_malformed_section_is_refused(dotted, value):
    params = ant()
    if dotted.endswith(".name"):
        params["network"]["mlp"]["initializer"] = {"gain": 1.0}  # no name
    else:
        with_value(params, dotted, value)
    with pytest.raises(ConfigError) as caught:
        check_rlgames_names(params)
    assert caught.value.key == f"train.params.{dotted}"


def test_every_name_rl_games_registers_is_accepted():
    factories = NetworkBuilder.BaseNetwork()
    for name in factories.activations_factory._builders:
        check_rlgames_names(with_value(ant(), "network.mlp.activation", name))
    for name in factories.init_factory._builders:
        check_rlgames_names(with_value(ant(), "network.mlp.initializer", {"name": name}))
    for name in model_builder.ModelBuilder().model_factory._builders:
        check_rlgames_names(with_value(ant(), "model.name", name))
    shaper = {"scale_value": 2, "shift_value": -0.5, "min_val": -1, "max_val": 1.0, "log_val": True}
    check_rlgames_names(with_value(ant(), "config.reward_shaper", shaper))
    for value in (True, False):
        check_rlgames_names(with_value(ant(), "config.normalize_input", value))


@pytest.mark.parametrize("path", TRAIN_FILES, ids=[p.stem for p in TRAIN_FILES])
def test_every_bundled_train_config_passes(path):
    check_rlgames_names(train_params(path))


@pytest.mark.parametrize("task", [p.stem.removesuffix("PPO") for p in TRAIN_FILES])
def test_every_bundled_train_config_passes_resolved(task, compose_cfg):
    """As the planner hands it over: composed with its task and resolved."""
    cfg = compose_cfg(f"task={task}")
    check_rlgames_names(OmegaConf.to_container(cfg.train, resolve=True)["params"])


class _OwnNetwork(A2CBuilder):
    """A network of one's own, registered at run time; it reads its keys its own way."""


@pytest.fixture
def own_network():
    model_builder.register_network("own_net", _OwnNetwork)
    model_builder.register_model("own_model", lambda network: network)
    yield
    model_builder.NETWORK_REGISTRY.pop("own_net", None)
    model_builder.MODEL_REGISTRY.pop("own_model", None)


def test_a_network_and_model_registered_at_run_time_are_accepted(own_network):
    params = with_value(ant(), "network.name", "own_net")
    params["network"]["mlp"]["activation"] = "own_activation"  # its own keys are its business
    check_rlgames_names(with_value(params, "model.name", "own_model"))
    with pytest.raises(ConfigError) as caught:
        check_rlgames_names(with_value(ant(), "network.name", "own_nett"))
    assert "own_net" in allowed(caught.value)


LIVE = """
import json, sys
from isaacgymenvs_gmi.rl.train_names import check_rlgames_names
check_rlgames_names({"algo": {"name": "sac"}, "network": {"name": "testnet"}})
heavy = ("rl_games.torch_runner", "rl_games.envs.test_network", "torch._dynamo")
loaded = [name for name in heavy if name in sys.modules]
from rl_games.torch_runner import Runner
runner = Runner()
algos = set(runner.algo_factory._builders) & set(runner.player_factory._builders)
print(json.dumps({"loaded": loaded, "algos": sorted(algos)}))
"""


def test_algorithms_are_those_a_built_runner_registers_and_checking_stays_light():
    """rl-games' test networks count (registered lazily); neither rl-games' trainer, its test
    networks nor torch's compiler is imported to check."""
    proc = subprocess.run([sys.executable, "-c", LIVE], capture_output=True, text=True)
    assert_ok(proc)
    live = json.loads(proc.stdout.strip().splitlines()[-1])
    assert live["loaded"] == []
    with pytest.raises(ConfigError) as caught:
        check_rlgames_names({"algo": {"name": "bogus"}})
    assert allowed(caught.value) == live["algos"]
