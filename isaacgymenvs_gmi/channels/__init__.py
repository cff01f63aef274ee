"""Experience channels between actor and trainer GMIs (paper Sec. 4.2, Fig. 5).

An actor's :class:`Dispenser` splits each env step by kind (:mod:`.kinds`) into the channels of
:mod:`.spec`; per channel a :class:`~.compressor.Compressor` packs steps straight into a slot of
the route's ring (:mod:`.route`) until the transfer is full; the migrator (:mod:`.migrator`)
sends each chunk to the trainer with the most free credit and, on the trainer, rebuilds whole
chunks from the slots; the trainer's :class:`Batcher` stacks or slices them into training
batches and drops data too old for the policy; the :class:`Ledger` checks every chunk arrives
once and in order. Weights go the other way through a :class:`WeightsBoard`. Routes and boards
live in shared memory between processes, or in private memory in one process (the twin).
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
