"""Another local user, probing a run: finds what it can of the rendezvous and tries to write it.

:func:`probe_as_stranger` forks a child of the test process that, when the tests run as root,
becomes the user ``nobody`` first (without root it stays this user, and :attr:`Findings.other_user`
says so: a same-user process can read anything of ours, so only the socket probes mean much).
The child was handed neither the run's secret nor its folder: it knows what any local user
knows (the temp dir, the run's pids, the loopback ports it listens on: anyone can read them in
``/proc/net/tcp``; the test names only the run's, so no other socket of the machine is touched).
"""

from __future__ import annotations

import contextlib
import encodings.idna  # noqa: F401 - loaded now: as nobody, Python's own files may be unreadable
import json
import os
import socket
import traceback
from dataclasses import dataclass
from datetime import timedelta

import torch.distributed as dist

NOBODY = 65534
TORCH_KEYS = ("default_pg/0//cpu//0", "default_pg/0/0", "pg/0", "store_based_barrier_key/1")


@dataclass(frozen=True)
class Findings:
    """What the stranger managed: each count is of things it should not have been able to do."""

    other_user: bool  # it ran as another user (the test runs as root)
    stores_found: int  # listening sockets that answered as a torch store
    keys_written: int  # keys it wrote into a store it found
    folders_listed: int  # run folders in the temp dir whose contents it could list
    files_opened: int  # files of a run folder it could open for writing
    environs_read: int  # the run's processes whose environment it could read
    sockets_written: int  # listening sockets it sent garbage to (allowed; gloo may refuse it)


def _probe(temp_dir: str, pids: list[int], ports: list[int]) -> dict:
    found = {"stores_found": 0, "keys_written": 0, "sockets_written": 0}
    for port in ports:
        try:
            store = dist.TCPStore("127.0.0.1", port, None, False, timedelta(seconds=2))
        except Exception:  # noqa: BLE001 - not a store: expected
            pass
        else:
            found["stores_found"] += 1
            for key in TORCH_KEYS:
                with contextlib.suppress(Exception):
                    store.set(key, "127.0.0.1:1")
                    found["keys_written"] += 1
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 2) as s:
            s.sendall(os.urandom(64))
            found["sockets_written"] += 1
    found["folders_listed"] = found["files_opened"] = 0
    for entry in os.listdir(temp_dir):
        folder = os.path.join(temp_dir, entry)
        with contextlib.suppress(OSError):
            os.listdir(folder)
            found["folders_listed"] += 1
        for name in ("rendezvous/pg", "rendezvous/keys/x"):
            with contextlib.suppress(OSError), open(os.path.join(folder, name), "ab") as out:
                out.write(b"forged")
                found["files_opened"] += 1
    found["environs_read"] = 0
    for pid in pids:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as env:
            env.read()
            found["environs_read"] += 1
    return found


def probe_as_stranger(temp_dir: str, pids: list[int], ports: list[int]) -> Findings:
    """Probe the run of ``pids``, whose temp files are in ``temp_dir`` and which listens on
    ``ports``, from a forked child (user ``nobody`` when we are root); what it managed."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        code = 0
        try:
            os.close(read)
            other = os.getuid() == 0
            if other:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            report = {"other_user": other, **_probe(temp_dir, pids, ports)}
            os.write(write, json.dumps(report).encode())
        except BaseException:  # noqa: BLE001 - the parent sees an empty report
            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        raw = pipe.read()
    _, status = os.waitpid(child, 0)
    assert status == 0 and raw, f"the stranger's probe failed (status {status})"
    return Findings(**json.loads(raw))
