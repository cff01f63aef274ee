"""Experience channels between actor and trainer GMIs (paper Sec. 4.2, Fig. 5).

A rollout chunk is split by kind into channels (:mod:`.chunks`), carried by a transport with
bounded buffers (:mod:`.in_process` is the in-process twin every other transport is tested
against), and accounted for exactly once (:mod:`.ledger`).
"""

from .chunks import CHANNEL_KINDS, Chunk, dispense
from .in_process import InProcessChannel
from .ledger import ExactlyOnceError, Ledger

__all__ = ["CHANNEL_KINDS", "Chunk", "ExactlyOnceError", "InProcessChannel", "Ledger", "dispense"]
