"""isaacgymenvs_gmi: IsaacGymEnvs-style RL training split across GPU multiplexing instances."""

from .xla_defaults import apply_cpu_defaults

apply_cpu_defaults()  # before anything starts JAX

__version__ = "0.1.0"
