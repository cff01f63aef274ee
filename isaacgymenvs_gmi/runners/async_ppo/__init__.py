"""Asynchronous PPO (``gmi.mode=async``, paper Sec. 4.2 and 6): actor GMIs stream experience
through the channels to trainer GMIs, which correct for policy lag with :mod:`.vtrace` inside
rl-games' PPO objective and publish each new policy back to the actors. :func:`run_async_ppo`
is the body; :mod:`.serial` runs every role in one process.
"""

from isaacgymenvs_gmi.config.async_mode import AsyncSettings
from isaacgymenvs_gmi.runners.mode import Mode

from .body import run_async_ppo
from .checks import check_async

MODE = Mode(
    name="async",
    summary="A3C/APPO: actor GMIs stream experience to trainer GMIs",
    body=run_async_ppo,
    check=check_async,
    in_one_process=lambda plan: plan.mode_settings.serial,
    settings=lambda cfg: AsyncSettings.from_cfg(cfg),
    group=AsyncSettings.PREFIX,
    not_searched="in async mode give gmi.per_gpu a number",
)

__all__ = ["MODE", "run_async_ppo"]
