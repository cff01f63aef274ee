"""Synchronous PPO (``gmi.mode=sync``): rl-games' PPO in every GMI, in lockstep.

:func:`run_sync_ppo` is the body; :class:`~.agent.GmiPpoAgent` the rl-games agent, kept
identical with the others by :mod:`isaacgymenvs_gmi.runners.lockstep`; :mod:`.telemetry` the
per-epoch progress line. Heavy imports (rl-games, the simulator) happen inside the body, so a
freshly spawned GMI binds its resources before they load.
"""

from .body import run_sync_ppo

__all__ = ["run_sync_ppo"]
