"""Experience channels between actor and trainer GMIs (paper Sec. 4.2, Fig. 5).

An actor's :class:`Dispenser` splits each env step by kind (:mod:`.kinds`) into the channels of
:mod:`.spec`, packed by a :class:`~.compressor.Compressor` into slots of the route's rings
(:mod:`.route`); the migrator sends each chunk to the trainer with the most free credit and
rebuilds it there; the trainer's :class:`Batcher` makes training batches, dropping data too old
for the policy; the :class:`Ledger` checks every chunk arrives once and in order. Weights go
back through a :class:`WeightsBoard`.
"""

from .batcher import Batcher, LagStats
from .dispenser import Dispenser
from .kinds import KindSpec, experience_kinds
from .ledger import ExactlyOnceError, Ledger, balance_line
from .migrator import Chunk, Collector
from .route import ChannelClosed, Route, route_shape
from .spec import channel_specs
from .weights import WeightsBoard, flatten, unflatten

__all__ = [
    "Batcher",
    "ChannelClosed",
    "Chunk",
    "Collector",
    "Dispenser",
    "ExactlyOnceError",
    "KindSpec",
    "LagStats",
    "Ledger",
    "Route",
    "WeightsBoard",
    "balance_line",
    "channel_specs",
    "experience_kinds",
    "flatten",
    "route_shape",
    "unflatten",
]
