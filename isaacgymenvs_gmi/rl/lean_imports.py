"""Import less of rl-games: its test networks, and torch's compiler, only on use.

``rl_games.envs``' ``__init__`` imports rl-games' test networks, one decorated with
``torch.compile`` at import, which loads ``torch._inductor`` (about 0.6 s per GMI).
:func:`defer_rl_games_test_networks` puts the package in place without running its ``__init__``
and registers the three networks to import their module when a config asks for one. Call it
before anything imports ``rl_games.common``.

rl-games' trainer, torch's optimizer and ``torch.distributed`` import ``torch._dynamo`` only to
set one option, mark a few methods "never compile", call ``graph_break()`` (a no-op outside
compiled code) and clear its caches: about 1.1 s per process that never compiles.
:func:`defer_torch_compiler` puts a stand-in in its place that serves exactly those uses as the
real module would outside compiled code; anything else asked of it (``torch.compile``, say)
imports the real module, which then receives the recorded options and marks its methods again.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types

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
    return lambda: getattr(importlib.import_module("rl_games.envs.test_network"), cls)()


COMPILER = "torch._dynamo"
MARK_CACHE = "__dynamo_disable"  # where torch's "never compile" wrapper keeps what it calls


def defer_torch_compiler() -> bool:
    """Put the compiler's stand-in in place; whether it now is (False: the real module was
    imported already)."""
    if COMPILER in sys.modules:
        return isinstance(sys.modules[COMPILER], _CompilerStandIn)
    import torch  # noqa: F401 - the stand-in is a submodule of the real package

    sys.modules[COMPILER] = _CompilerStandIn(COMPILER, _run_unmarked())
    return True


def _run_unmarked() -> list:
    """Let the optimizer methods torch marks "never compile" (marking them imports the compiler
    on their first call) run as themselves; returns the methods, to undo it."""
    import torch._compile
    from torch.optim.optimizer import Optimizer

    marker = torch._compile._disable_dynamo(lambda: None).__code__  # torch's marking wrapper
    unmarked = []
    for attr in vars(Optimizer).values():
        inner = getattr(attr, "__wrapped__", None)
        marked = getattr(attr, "__code__", None) is marker and callable(inner)
        if marked and not hasattr(inner, MARK_CACHE):
            setattr(inner, MARK_CACHE, inner)  # torch's wrapper calls what it finds here
            unmarked.append(inner)
    return unmarked


class _RecordedConfig:
    """Takes ``config.<option> = value`` and keeps it; reads an option set here back, and any
    other from the real compiler (importing it)."""

    def __init__(self, load):
        object.__setattr__(self, "recorded", {})
        object.__setattr__(self, "_load", load)

    def __setattr__(self, name: str, value) -> None:
        self.recorded[name] = value

    def __getattr__(self, name: str):
        if name in self.recorded:
            return self.recorded[name]
        return getattr(self._load().config, name)


class _CompilerStandIn(types.ModuleType):
    """``torch._dynamo`` until something needs the real one (see the module docstring)."""

    def __init__(self, name: str, unmarked: list):
        super().__init__(name)
        self.config = _RecordedConfig(self._load)
        self.graph_break = lambda msg="": None  # as the real one outside compiled code
        # trace_rules of a compiler that never ran: its caches are empty
        self.trace_rules = types.SimpleNamespace(clear_lru_cache=lambda: None)
        self._unmarked = unmarked

    def __getattr__(self, name: str):
        # a module's dunders (``__file__``, ...) are asked of every module by tools walking
        # sys.modules (``inspect.getmodule``), even halfway through another import: absent here.
        # ``__path__`` is asked when a submodule is imported: that needs the real package.
        if name.startswith("__") and name.endswith("__") and name != "__path__":
            raise AttributeError(name)
        return getattr(self._load(), name)

    def _load(self) -> types.ModuleType:
        if sys.modules.get(COMPILER) is self:
            del sys.modules[COMPILER]
        real = importlib.import_module(COMPILER)
        for option, value in self.config.recorded.items():
            setattr(real.config, option, value)
        for method in self._unmarked:
            if getattr(method, MARK_CACHE, None) is method:
                delattr(method, MARK_CACHE)
        self._unmarked = []
        return real
