"""Communication between GMIs: layout-aware gradient reduction (paper Sec. 4.1).

:func:`build_gradient_reduction` turns a layout into a :class:`Reducer` whose ``mean(flat)``
averages a flat gradient over all GMIs, each group over the transport that suits it.

One minibatch's gradient, from the learner to the bytes that cross processes:

1. ``runners/shared/stopping.py``: ``StoppableAgent.trancate_gradients_and_step`` (rl-games'
   hook, after the backward pass) calls ``reduce_gradients``;
2. ``runners/shared/lockstep.py``: ``ReplicatedPpo.reduce_gradients`` ->
   ``PpoLockstep.reduce_gradients_and_kl`` -> ``average_gradients``;
3. ``comm/buckets.py``: ``GradientBuckets.reduce`` flattens the ``.grad`` tensors into float32
   buckets (the KL rides in the last), each to ``PpoLockstep._mean``;
4. ``gmi/guard.py``: ``CollectiveGuard.__call__`` records the collective (names a GMI that never
   comes) around
5. ``comm/reducers.py``: ``Reducer.mean``: MPR, MRR, HAR or measured ``auto``, each a sequence
   of ``all_reduce``/``reduce``/``broadcast`` over groups of GMIs, then ``/ GMIs``;
6. ``comm/routing.py``: ``RoutedCollectives`` sends each group to its transport, staging a GPU
   bucket through pinned host memory for a host transport:

   - inside a CPU device, or host-staged on a GPU (``shm``): ``comm/shared_memory.py``
     ``SharedMemoryCollectives._sum``: write own row, barrier, sum own slice of all rows into
     the result row, barrier, read the result;
   - inside a GPU under MPS (``ipc``): ``comm/cuda_ipc.py`` ``CudaIpcCollectives``: the same
     rows in device memory, opened by CUDA IPC, streams synchronised before every barrier;
   - across devices: ``comm/collectives.py`` ``TorchCollectives``: gloo (CPU), NCCL (GPUs).
"""

from .collectives import Collectives
from .reducers import Reducer, build_gradient_reduction, check_transports, mrr_valid
from .routing import ipc_possible

__all__ = [
    "Collectives",
    "Reducer",
    "build_gradient_reduction",
    "check_transports",
    "ipc_possible",
    "mrr_valid",
]
