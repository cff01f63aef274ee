"""Communication between GMIs: layout-aware gradient reduction (paper Sec. 4.1).

:func:`build_gradient_reduction` is the entry: from a layout to a :class:`Reducer` whose
``mean(flat)`` averages a flat gradient over all GMIs, over the transports that suit each group
(:class:`Collectives`: torch.distributed, shared memory, CUDA IPC, or the in-process twin).
"""

from .collectives import Collectives, Group, ThreadCollectives, ThreadHub, TorchCollectives
from .gradient_reduction import GradientReduction, build_gradient_reduction
from .reducers import Reducer, make_reducer
from .routing import RoutedCollectives, TransportChoice, ipc_possible
from .selector import Strategy, mrr_valid, select_strategy
from .store import Store

__all__ = [
    "Collectives",
    "GradientReduction",
    "Group",
    "Reducer",
    "RoutedCollectives",
    "Store",
    "Strategy",
    "ThreadCollectives",
    "ThreadHub",
    "TorchCollectives",
    "TransportChoice",
    "build_gradient_reduction",
    "ipc_possible",
    "make_reducer",
    "mrr_valid",
    "select_strategy",
]
