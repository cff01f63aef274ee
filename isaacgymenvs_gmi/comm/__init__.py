"""Communication between GMIs: layout-aware gradient reduction (paper Sec. 4.1).

:func:`build_gradient_reduction` is the entry: from a layout to a :class:`Reducer` whose
``mean(flat)`` averages a flat gradient over all GMIs, over the transports that suit each group
(:class:`Collectives`: torch.distributed, shared memory, CUDA IPC, or the in-process twin).
"""

from .collectives import Collectives
from .gradient_reduction import build_gradient_reduction
from .reducers import Reducer
from .routing import ipc_possible
from .selector import mrr_valid

__all__ = [
    "Collectives",
    "Reducer",
    "build_gradient_reduction",
    "ipc_possible",
    "mrr_valid",
]
