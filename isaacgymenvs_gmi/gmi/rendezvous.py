"""Where the GMIs of a run on one node meet: files in the run's private 0700 folder, no socket.

It holds ``pg``, torch's ``FileStore`` for the process group's own keys, and ``keys/``, a signed
:class:`~isaacgymenvs_gmi.comm.folder_store.FolderStore` for the runtime's keys. (``torchrun``
brings its own TCP store: :func:`~.worker.gmi_main`.)
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from isaacgymenvs_gmi.comm.folder_store import FolderStore
from isaacgymenvs_gmi.comm.signed_store import SignedStore

ANY_NUMBER_OF_USERS = -1  # FileStore then never removes its file: the launcher removes the folder


def make_rendezvous(scratch_root: str) -> str:
    """A fresh rendezvous folder for one run inside ``scratch_root``; returns its path."""
    folder = os.path.join(scratch_root, "rendezvous")
    os.mkdir(folder, mode=0o700)
    os.chmod(folder, 0o700)  # whatever the umask
    return folder


def open_rendezvous(folder: str, secret: bytes, timeout: timedelta) -> tuple[Any, SignedStore]:
    """This GMI's view of the rendezvous ``folder``: the process group's store and the
    runtime's signed store."""
    import torch.distributed as dist

    group_store = dist.FileStore(os.path.join(folder, "pg"), ANY_NUMBER_OF_USERS)
    group_store.set_timeout(timeout)
    return group_store, SignedStore(FolderStore(os.path.join(folder, "keys"), timeout), secret)
