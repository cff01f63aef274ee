"""isaacgymenvs_gmi: IsaacGymEnvs-style RL training split across GPU multiplexing instances."""

__version__ = "0.1.0"
