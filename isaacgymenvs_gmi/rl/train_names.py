"""Up-front check of the names and switches rl-games looks up in ``train.params``.

rl-games looks names up in its factories only while it builds the agent (and hands
``config.reward_shaper`` to ``DefaultRewardsShaper(**...)`` as is): a typo fails in every GMI
20-50 s after start. This check refuses it before any process starts, naming the key and the
values allowed, taken from rl-games' live factories and, for the Runner's algorithms, its
source. Only keys present are checked; ``${...}`` values (not resolved yet) are skipped.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from isaacgymenvs_gmi.config.errors import ConfigError, one_of
from isaacgymenvs_gmi.config.schema import FLAG, Real

_PREFIX = "train.params"
_MISSING = object()  # a key not there (None is a value rl-games would look up)

# The keys rl-games' own network builders read through their activation and initializer
# factories (code paths, not a registry).
_ACTIVATION_KEYS = (
    "mlp.activation",
    "cnn.activation",
    "value_activation",
    "space.continuous.mu_activation",
    "space.continuous.sigma_activation",
)
_INITIALIZER_KEYS = (
    "mlp.initializer",
    "cnn.initializer",
    "space.continuous.mu_init",
    "space.continuous.sigma_init",
)
# ``BaseNetwork._build_rnn`` picks these by if/else (None for any other name): no registry.
_RNN_NAMES = ("identity", "lstm", "gru")

# The switches rl-games' PPO and central value read with ``if`` (a string, "False" too, counts as
# true); not ``multi_gpu``, ``population_based_training`` or ``print_stats``, which GMIs overwrite.
_SWITCHES = (
    "clip_actions",
    "clip_value",
    "freeze_critic",
    "mixed_precision",
    "normalize_advantage",
    "normalize_input",
    "normalize_rms_advantage",
    "normalize_value",
    "ppo",
    "schedule_entropy",
    "self_play",
    "truncate_grads",
    "use_action_masks",
    "use_diagnostics",
    "use_experimental_cv",
    "use_smooth_clamp",
    "value_bootstrap",
    "zero_rnn_on_done",
)
# rl-games' Runner builds its agents in ``algo_factory`` and its players in ``player_factory``;
# GMIs train and play from one config, so a name must be registered on both.
_RUNNER = "rl_games.torch_runner", "Runner"
_NETWORKS = "rl_games.algos_torch.model_builder", "NetworkBuilder", "network_factory"


def check_rlgames_names(train_params: Mapping[str, Any]) -> None:
    """Check the rl-games names and switches in ``train.params``; raises :class:`ConfigError`
    naming the dotted key, the value and the values rl-games accepts there."""
    from rl_games.algos_torch import model_builder

    from .lean_imports import defer_rl_games_test_networks

    defer_rl_games_test_networks()  # registers rl-games' test networks, as its trainer would
    builder = model_builder.ModelBuilder()
    models = builder.model_factory._builders
    networks = builder.get_network_builder().network_factory._builders
    algos = _registered(*_RUNNER, "algo_factory") & _registered(*_RUNNER, "player_factory")
    if algos:  # empty: rl-games' source is not there to read
        _name(f"{_PREFIX}.algo.name", _at(train_params, "algo.name"), algos, "algorithms")
    _model_and_network(_PREFIX, train_params, models, networks)
    config = _at(train_params, "config")
    if not isinstance(config, Mapping):
        return
    _switches(f"{_PREFIX}.config", config)
    _reward_shaper(f"{_PREFIX}.config.reward_shaper", config.get("reward_shaper", _MISSING))
    central = config.get("central_value_config")
    if isinstance(central, Mapping):
        key = f"{_PREFIX}.config.central_value_config"
        _model_and_network(key, central, models, networks)
        _switches(key, central)


def _model_and_network(prefix: str, params: Mapping, models: Iterable, networks: Iterable) -> None:
    _name(f"{prefix}.model.name", _at(params, "model.name"), models, "models")
    network = _at(params, "network")
    if not isinstance(network, Mapping):
        return
    name = network.get("name", _MISSING)
    _name(f"{prefix}.network.name", name, networks, "networks")
    if name not in _registered(*_NETWORKS):  # also when absent or ${...}
        return  # only rl-games' own networks read the keys below
    from rl_games.algos_torch.network_builder import NetworkBuilder

    factories = NetworkBuilder.BaseNetwork()  # an empty module holding rl-games' two factories
    activations = factories.activations_factory._builders
    for key in _ACTIVATION_KEYS:
        _name(f"{prefix}.network.{key}", _at(network, key), activations, "activations")
    initializers = factories.init_factory._builders
    for key in _INITIALIZER_KEYS:
        init = _at(network, key)
        if init is _MISSING or _unresolved(init):
            continue
        if not isinstance(init, Mapping):
            raise ConfigError(f"{prefix}.network.{key}", init, "must be a mapping with a name")
        _name(f"{prefix}.network.{key}.name", init.get("name"), initializers, "initializers")
    _name(f"{prefix}.network.rnn.name", _at(network, "rnn.name"), _RNN_NAMES, "recurrent layers")


def _switches(prefix: str, config: Mapping) -> None:
    for name in _SWITCHES:
        if name in config and not _unresolved(config[name]):
            FLAG.check(f"{prefix}.{name}", config[name])


def _reward_shaper(key: str, shaper: Any) -> None:
    """Keys and types of ``DefaultRewardsShaper``'s arguments: a bool default takes true or
    false, a numeric one a number."""
    if shaper is _MISSING or _unresolved(shaper):
        return
    if not isinstance(shaper, Mapping):
        raise ConfigError(key, shaper, "must be a mapping")
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    params = dict(inspect.signature(DefaultRewardsShaper).parameters)
    for name, value in shaper.items():
        if name not in params:
            raise ConfigError(f"{key}.{name}", value, f"unknown key: {one_of(params)}")
        if _unresolved(value):
            continue
        (FLAG if isinstance(params[name].default, bool) else Real()).check(f"{key}.{name}", value)


def _name(key: str, value: Any, allowed: Iterable[str], what: str) -> None:
    """A present ``value`` (None too: rl-games would look it up) must be one of ``allowed``."""
    if value is _MISSING or _unresolved(value):
        return
    names = sorted(allowed)
    if not (isinstance(value, str) and value in names):
        raise ConfigError(key, value, f"{one_of(names)} (the {what} registered in rl-games)")


@functools.cache
def _registered(module: str, cls: str, factory: str) -> frozenset[str]:
    """The names class ``cls`` of ``module`` passes to ``self.<factory>.register_builder``, read
    from its source (importing the Runner costs 1-2 s and building one sets torch's global TF32
    and cuDNN flags). Empty when there is no source to read."""
    spec = importlib.util.find_spec(module)
    get_source = getattr(spec.loader, "get_source", None) if spec else None
    source = get_source(module) if get_source else None
    names: set[str] = set()
    for node in ast.walk(ast.parse(source or "")):
        if not (isinstance(node, ast.ClassDef) and node.name == cls):
            continue
        for call in ast.walk(node):
            match call:
                case ast.Call(
                    func=ast.Attribute(attr="register_builder", value=ast.Attribute(attr=owner)),
                    args=[ast.Constant(value=str() as name), *_],
                ) if owner == factory:
                    names.add(name)
    return frozenset(names)


def _at(node: Any, dotted: str) -> Any:
    """The value at ``dotted`` under ``node``, or ``_MISSING``."""
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _unresolved(value: Any) -> bool:
    return isinstance(value, str) and value.startswith("${")


_QUOTED_NAME = re.compile(r"""['"]([A-Za-z_][A-Za-z0-9_]*)['"]""")


@functools.cache
def rlgames_names() -> frozenset[str]:
    """Every quoted identifier in the source of rl-games' agent, player, network and runner
    modules: a superset of the ``train.params.config`` keys it can read."""
    spec = importlib.util.find_spec("rl_games")
    if spec is None or spec.origin is None:
        return frozenset()
    root = Path(spec.origin).parent
    files = [*root.glob("common/*.py"), *root.glob("algos_torch/*.py"), root / "torch_runner.py"]
    names: set[str] = set()
    for path in files:
        names.update(_QUOTED_NAME.findall(path.read_text(encoding="utf-8")))
    return frozenset(names)


def unread_train_config_keys(train_params: Mapping[str, Any]) -> list[str]:
    """``train.params.config.*`` keys rl-games never reads (accepted and ignored by it)."""
    config = train_params.get("config")
    if not isinstance(config, Mapping):
        return []
    names = rlgames_names()
    if not names:
        return []
    return [f"{_PREFIX}.config.{key}" for key in config if str(key) not in names]
