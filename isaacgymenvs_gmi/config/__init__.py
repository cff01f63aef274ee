"""Configuration: Hydra resolvers, typed settings built from the composed config, and checks.

Each setting is validated once, at the edge, into a frozen dataclass; problems raise
:class:`ConfigError` with the dotted key and what is allowed.
"""

from .errors import ConfigError
from .gmi import GMI_BACKENDS, GMI_COMMS, GmiConfig
from .ignored import ignored_physx_keys, report_ignored_keys
from .resolvers import register_resolvers
from .run_settings import RunSettings, TrainSettings, divisors_near
from .sim import SimSettings, detect_platform, resolve_sim_settings

__all__ = [
    "GMI_BACKENDS",
    "GMI_COMMS",
    "ConfigError",
    "GmiConfig",
    "RunSettings",
    "SimSettings",
    "TrainSettings",
    "detect_platform",
    "divisors_near",
    "ignored_physx_keys",
    "register_resolvers",
    "report_ignored_keys",
    "resolve_sim_settings",
]
