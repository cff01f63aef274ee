"""Asynchronous PPO (``gmi.mode=async``, paper Sec. 4.2 and 6): actor GMIs stream experience to
trainer GMIs, which correct for policy lag with :mod:`.vtrace` inside rl-games' PPO objective.

The mode is refused when a run is planned until its body is registered in
:data:`isaacgymenvs_gmi.runners.BODIES`.
"""
