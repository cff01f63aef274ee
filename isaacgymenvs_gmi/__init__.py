"""isaacgymenvs_gmi: IsaacGymEnvs-style RL training split across GPU multiplexing instances.

The public names below load on first use, so ``import isaacgymenvs_gmi`` stays light (the XLA
defaults must be set before anything starts JAX).
"""

from importlib import import_module

from .xla_defaults import apply_cpu_defaults

apply_cpu_defaults()  # before anything starts JAX

__version__ = "0.1.0"

_PUBLIC = {  # name -> module that defines it
    "make": "isaacgymenvs_gmi.api",
    "run": "isaacgymenvs_gmi.api",
    "compose_config": "isaacgymenvs_gmi.config.compose",
    "register_resolvers": "isaacgymenvs_gmi.config",
    "ConfigError": "isaacgymenvs_gmi.config",
    "register_task": "isaacgymenvs_gmi.tasks",
    "unregister_task": "isaacgymenvs_gmi.tasks",
    "known_tasks": "isaacgymenvs_gmi.tasks",
    "TaskLogic": "isaacgymenvs_gmi.tasks.base",
    "PhysicsFrame": "isaacgymenvs_gmi.tasks.base",
    "TaskConfigError": "isaacgymenvs_gmi.tasks.base",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'isaacgymenvs_gmi' has no attribute {name!r}")
