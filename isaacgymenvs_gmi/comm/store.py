"""The key-value store GMIs share for rendezvous, progress records and transport set-up.

A :class:`~.folder_store.FolderStore` in the run's private folder (GMIs our launcher spawns) or
torchrun's ``TCPStore``, signed either way; ``HashStore`` (one process) or ``FileStore`` (several)
where a test wants one of its own.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Protocol


class Store(Protocol):
    """The part of ``torch.distributed.Store`` the runtime uses."""

    def set(self, key: str, value: str | bytes) -> None:
        """Publish ``value`` under ``key`` (overwrites)."""

    def get(self, key: str) -> bytes:
        """The value under ``key``, waiting up to the store's timeout for it to appear."""

    def set_timeout(self, timeout: timedelta) -> None:
        """How long later ``get`` calls wait."""
