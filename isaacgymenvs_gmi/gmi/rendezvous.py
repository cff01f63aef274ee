"""Where the GMIs of a run on one node meet: files in the run's private folder, no socket.

The folder (mode 0700, inside the launcher's private temp folder) holds

- ``pg``: torch's ``FileStore`` for the process group's own keys (gloo's address exchange and
  barriers), opened by every GMI;
- ``keys/``: a :class:`~isaacgymenvs_gmi.comm.folder_store.FolderStore` for the runtime's keys
  (progress records, transport set-up), whose values are also signed with the run's secret.

Only the run's user can open either: another local user can neither find nor write the
rendezvous, torch's keys included. (``torchrun`` brings its own TCP store instead; see
:func:`~.worker.gmi_main`.)
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
