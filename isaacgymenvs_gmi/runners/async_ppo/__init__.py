"""Asynchronous PPO (``gmi.mode=async``, paper Sec. 4.2 and 6): actor GMIs stream experience
through the channels to trainer GMIs, which correct for policy lag with :mod:`.vtrace` inside
rl-games' PPO objective and publish each new policy back to the actors.

:func:`run_async_ppo` is the body; :mod:`.roles` says who trains; :mod:`.links` opens the
channels; :mod:`.actor` and :mod:`.trainer_loop` are the two loops; :mod:`.trainer` is the
rl-games agent fed by the batcher; :mod:`.serial` runs every role in one process.
"""

from .body import run_async_ppo

__all__ = ["run_async_ppo"]
