"""Collectives among the GMIs of one GPU through a device buffer they share by CUDA IPC.

Beyond the paper, which stages every intra-GPU reduction through host memory: under MPS (or
plain time-sharing) the GMIs of a GPU are processes on the same device, so one of them can
allocate the ``k + 1`` rows in device memory and the others open that allocation through a CUDA
IPC handle. Gradients then never cross PCIe. The protocol is the shared-memory one (write,
barrier, combine a slice, barrier, read), with the barrier counters still in a small host
segment; before each barrier a GMI waits for its own stream, so the others see its writes.

Not possible between MIG instances (separate memory partitions) or across GPUs.
"""

from __future__ import annotations

import mmap
import pickle

import torch
from torch.multiprocessing.reductions import reduce_tensor

from .collectives import Group
from .shared_memory import DEFAULT_ROW_BYTES, SharedMemoryCollectives
from .store import Store


class CudaIpcCollectives(SharedMemoryCollectives):
    """Collectives over ``members`` (GMIs on one GPU, ``device`` in this process's numbering).

    The first member allocates the rows and publishes their IPC handle under ``key`` in
    ``store``; it must outlive the others' use of the rows (every GMI lives for the whole run).
    """

    def __init__(
        self,
        rank: int,
        members: Group,
        store: Store,
        key: str,
        device: torch.device | str,
        row_bytes: int = DEFAULT_ROW_BYTES,
        timeout_s: float = 1800.0,
    ):
        device = torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"CUDA IPC rows need a GPU device, not {device}")
        self.device = torch.device(
            "cuda", torch.cuda.current_device() if device.index is None else device.index
        )
        super().__init__(rank, members, store, key, row_bytes=row_bytes, timeout_s=timeout_s)

    def _host_row_bytes(self) -> int:
        return 0  # the host segment holds only the barrier counters

    def _make_rows(self, segment: mmap.mmap, header: int, store: Store, key: str) -> torch.Tensor:
        handle_key = f"{key}/cuda-ipc-rows"
        if self.me == 0:
            rows = torch.zeros((self.k + 1) * self.row_bytes, dtype=torch.uint8, device=self.device)
            torch.cuda.synchronize(self.device)
            store.set(handle_key, pickle.dumps(reduce_tensor(rows)))
            return rows
        rebuild, args = pickle.loads(store.get(handle_key))  # noqa: S301 - our own GMIs wrote it
        return rebuild(*args)

    def _fence(self) -> None:
        torch.cuda.current_stream(self.device).synchronize()
