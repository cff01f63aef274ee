"""Collectives among the GMIs of one GPU through a device buffer they share by CUDA IPC.

Beyond the paper (host-staged): under MPS or time-sharing one GMI allocates the ``k + 1`` rows
in device memory and the others open them by IPC handle, so gradients never cross PCIe. The
protocol is the shared-memory one, barrier counters still in a host segment; before each
barrier a GMI waits for its own stream. Not possible between MIG instances or across GPUs.
"""

from __future__ import annotations

import json
import mmap

import torch
from torch.multiprocessing.reductions import rebuild_cuda_tensor, reduce_tensor

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
            store.set(handle_key, encode_rows_handle(rows))
            return rows
        return open_rows_handle(store.get(handle_key), self.device)

    def _fence(self) -> None:
        torch.cuda.current_stream(self.device).synchronize()


def encode_rows_handle(rows: torch.Tensor) -> str:
    """JSON naming the CUDA allocation of ``rows`` ((n,) uint8 on a GPU): plain numbers and hex
    strings only, so the reader unpickles nothing."""
    _, args = reduce_tensor(rows)
    (_, size, stride, offset, _, dtype, device, handle, storage_bytes, storage_offset) = args[:10]
    if dtype != torch.uint8 or len(size) != 1 or tuple(stride) != (1,):
        raise ValueError("CUDA IPC rows must be a flat uint8 tensor")
    ref_handle, ref_offset, event_handle, event_sync = args[11:15]
    return json.dumps(
        {
            "numel": int(size[0]),
            "offset": int(offset),
            "device": int(device),
            "handle": bytes(handle).hex(),
            "storage_bytes": int(storage_bytes),
            "storage_offset": int(storage_offset),
            "ref_handle": bytes(ref_handle).hex(),
            "ref_offset": int(ref_offset),
            "event_handle": None if event_handle is None else bytes(event_handle).hex(),
            "event_sync": bool(event_sync),
        }
    )


def open_rows_handle(text: bytes | str, device: torch.device) -> torch.Tensor:
    """The rows published by :func:`encode_rows_handle`, opened in this process."""
    h = json.loads(text)
    if int(h["device"]) != device.index:
        raise ValueError(f"CUDA IPC rows live on cuda:{h['device']}, this GMI uses {device}")
    return rebuild_cuda_tensor(
        torch.Tensor,
        torch.Size([int(h["numel"])]),
        (1,),
        int(h["offset"]),
        torch.storage.TypedStorage,
        torch.uint8,
        int(h["device"]),
        bytes.fromhex(h["handle"]),
        int(h["storage_bytes"]),
        int(h["storage_offset"]),
        False,
        bytes.fromhex(h["ref_handle"]),
        int(h["ref_offset"]),
        None if h["event_handle"] is None else bytes.fromhex(h["event_handle"]),
        bool(h["event_sync"]),
    )
