"""Import less of rl-games: its test networks, and with them torch's compiler, only on use.

Importing rl-games' trainer pulls in ``rl_games.envs``, whose ``__init__`` imports the test
networks (``testnet``, ``simplenet``, ``testnet_aux_loss``); one of them is decorated with
``torch.compile`` at import, which loads ``torch._inductor`` (about 0.6 s per process, paid again
in every GMI). :func:`defer_rl_games_test_networks` puts the ``rl_games.envs`` package in place
without running its ``__init__`` (its submodules import as usual) and registers the three
networks under their names so that their module is imported when a config asks for one.
rl-games' files are not touched. Call it before anything imports ``rl_games.common``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

TEST_NETWORKS = {  # rl-games' name -> class in rl_games.envs.test_network
    "testnet": "TestNetBuilder",
    "simplenet": "SimpleNetBuilder",
    "testnet_aux_loss": "TestNetAuxLossBuilder",
}


def defer_rl_games_test_networks() -> bool:
    """Whether the test networks are now deferred (False: ``rl_games.envs`` was already
    imported, or rl-games is not installed)."""
    if "rl_games.envs" in sys.modules:
        return False
    try:
        spec = importlib.util.find_spec("rl_games.envs")
    except ModuleNotFoundError:
        return False
    if spec is None or spec.loader is None:
        return False
    sys.modules["rl_games.envs"] = importlib.util.module_from_spec(spec)  # not executed
    from rl_games.algos_torch import model_builder

    for name, cls in TEST_NETWORKS.items():
        model_builder.register_network(name, _on_first_use(cls))
    return True


def _on_first_use(cls: str):
    def build():
        module = importlib.import_module("rl_games.envs.test_network")
        return getattr(module, cls)()

    return build
