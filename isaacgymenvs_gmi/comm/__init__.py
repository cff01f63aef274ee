"""Communication between GMIs: layout-aware gradient reduction (paper Sec. 4.1).

:func:`build_gradient_reduction` is the entry: from a layout to a :class:`Reducer` whose
``mean(flat)`` averages a flat gradient over all GMIs, over the transports that suit each group
(:class:`Collectives`: torch.distributed, shared memory, CUDA IPC, or the in-process twin).

One minibatch's gradient, from the learner to the bytes that cross processes:

1. ``runners/shared/stopping.py``: ``StoppableAgent.trancate_gradients_and_step`` (rl-games'
   hook, after the backward pass) calls ``reduce_gradients``;
2. ``runners/shared/lockstep.py``: ``ReplicatedPpo.reduce_gradients`` ->
   ``PpoLockstep.reduce_gradients_and_kl`` -> ``average_gradients``;
3. ``comm/buckets.py``: ``GradientBuckets.reduce`` flattens the ``.grad`` tensors into float32
   buckets (the minibatch's KL rides in the last) and hands each to ``PpoLockstep._mean``;
4. ``gmi/guard.py``: ``CollectiveGuard.__call__`` records the collective (a GMI that never comes
   is named) around
5. ``comm/reducers.py``: ``Reducer.mean``: MPR, MRR, HAR or the measured ``auto``, each a
   sequence of ``all_reduce``/``reduce``/``broadcast`` over groups of GMIs, then ``/ GMIs``;
6. ``comm/routing.py``: ``RoutedCollectives`` sends each group to its transport, staging a GPU
   bucket through pinned host memory where the transport lives on the host:

   - inside a device on the CPU, or host-staged on a GPU (``gmi.intra_device=shm``):
     ``comm/shared_memory.py`` ``SharedMemoryCollectives._sum``: each GMI writes its row of a
     shared segment, a barrier, each sums its slice of all rows into the result row, a
     barrier, each reads the result;
   - inside a GPU under MPS (``ipc``): ``comm/cuda_ipc.py`` ``CudaIpcCollectives``: the same
     rows in device memory that the other GMIs open by CUDA IPC, each GMI's stream synchronised
     before every barrier;
   - across devices: ``comm/collectives.py`` ``TorchCollectives``: torch.distributed, gloo
     between CPU devices, NCCL between GPUs.
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
