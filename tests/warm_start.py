"""``train.py`` runs of the test suite forked from a warm process, not started cold.

A cold ``python train.py`` spends seconds importing torch, JAX, rl-games and Hydra before its
first line of work, and the suite starts well over a hundred of them. This module keeps one
process per test session that has made exactly the imports ``train.py`` makes before it starts
work (:data:`WARM_IMPORTS`), made no thread, and forks a child per run. The child becomes what a
cold process would be at that point: its own session if asked, signal dispositions and mask as
at interpreter start, the run's stdio, working folder, environment and ``sys.argv``; it runs
``train.py`` as ``__main__`` and exits through the interpreter's own shutdown (threads joined,
``atexit`` run, streams flushed). The product forks its GMIs from a launcher in the same state.

What a warm start cannot reproduce is what the environment decides at import time, so a run
whose environment differs from the warm process's in such a variable (:data:`IMPORT_TIME`) or
that changes ``PYTHONPATH`` starts cold; so does every run when the warm process is gone.
Tests that are about a cold start (the wheel install, the command line's own errors, torchrun)
start their processes themselves.

Run as ``python -m tests.warm_start FD``: the warm process, serving the socket ``FD``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRAIN_PY = str(ROOT / "train.py")
# what `python train.py` imports before Hydra sets up the job's logging, then the rest of what it
# imports before its first line of work
BEFORE_HYDRA_LOGGING = (
    "isaacgymenvs_gmi.cli",
    "isaacgymenvs_gmi.gmi.stop",
    "isaacgymenvs_gmi.startup_clock",
    "isaacgymenvs_gmi.config.sources",
    "hydra_plugins.isaacgymenvs_gmi_launcher",
    "hydra._internal.hydra",
    "hydra.core.utils",
)
WARM_IMPORTS = (
    "isaacgymenvs_gmi.cli",
    "isaacgymenvs_gmi.api",
    "hydra_plugins.isaacgymenvs_gmi_launcher",
)
IMPORT_TIME = ("PYTHON", "JAX_", "XLA_", "TORCH", "OMP_", "MKL_", "OPENBLAS_", "LD_", "CUDA_")
MAX_MESSAGE = 1 << 20
STARTED = {"warm": 0, "cold": 0}  # runs started through :func:`start` this session


# --- the warm process -------------------------------------------------------------------------
def _send(sock: socket.socket, message: dict, fds: Sequence[int] = ()) -> None:
    data = json.dumps(message).encode()
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.send(data)


def serve(sock: socket.socket) -> None:
    """Import, say ready, then fork a run per request and report each child's exit code."""
    import importlib

    for name in BEFORE_HYDRA_LOGGING:
        importlib.import_module(name)
    before = set(logging.Logger.manager.loggerDict)
    for name in WARM_IMPORTS:
        importlib.import_module(name)
    late = set(logging.Logger.manager.loggerDict) - before
    _send(sock, {"ready": True})
    while True:
        readable, _, _ = select.select([sock], [], [], 0.05)
        if readable:
            data, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 8)
            if not data:  # the suite is gone
                return
            request = json.loads(data)
            pid = os.fork()
            if pid == 0:
                sock.close()
                _become_the_run(request, fds, late)  # never returns: exits like a cold one
            for fd in fds:
                os.close(fd)
            _send(sock, {"started": request["id"], "pid": pid})
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            _send(sock, {"exited": pid, "code": os.waitstatus_to_exitcode(status)})


def _become_the_run(request: dict, fds: list[int], late: set[str]) -> None:
    """In the forked child: the state of a cold ``python train.py ARGS`` at its first line,
    then run it; exits through the interpreter with its code (raises SystemExit). ``late``:
    the loggers a cold process makes only after Hydra set up the job's logging (which turns
    off every logger that exists then); they stay on here too."""
    import runpy
    import tempfile

    if request["new_session"]:
        os.setsid()
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    for sig in signal.valid_signals():
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            with contextlib.suppress(OSError, ValueError):
                signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as the interpreter sets them
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    for target, fd in zip((1, 2), fds, strict=True):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None
    sys.argv = list(request["argv"][1:])  # as the interpreter sees `python train.py ARGS`
    sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
    _keep_on_after_job_logging(late)
    code: int | str | None = 0
    try:
        runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as done:
        code = done.code
    except BaseException:  # noqa: BLE001 - printed as the interpreter prints it
        import traceback

        traceback.print_exc()
        code = 1
    raise SystemExit(code)


def _keep_on_after_job_logging(late: set[str]) -> None:
    """Hydra's job logging goes through ``logging.config.dictConfig``: after its first call
    that turns existing loggers off, turn the ``late`` loggers back on, as they are in a cold
    process, which makes them only after that call."""
    import logging.config

    configure = logging.config.dictConfig

    def configure_then_keep_on(config: dict) -> None:
        configure(config)
        if not config.get("disable_existing_loggers", True):
            return
        logging.config.dictConfig = configure
        for name in late:
            logger = logging.Logger.manager.loggerDict.get(name)
            if isinstance(logger, logging.Logger):
                logger.disabled = False

    logging.config.dictConfig = configure_then_keep_on


# --- the suite's side -------------------------------------------------------------------------
class WarmProcess:
    """What :class:`subprocess.Popen` gives for a run started by the warm process: ``pid``,
    ``stdout``/``stderr`` (text pipes, or None), ``returncode``, ``poll``, ``wait``,
    ``communicate``, ``send_signal``, ``terminate``, ``kill``."""

    def __init__(self, server: WarmServer, pid: int, stdout, stderr):
        self._server, self.pid = server, pid
        self.stdout, self.stderr = stdout, stderr
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server.exit_code(self.pid, timeout=0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self._server.exit_code(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(TRAIN_PY, timeout)
            self.returncode = code
        return self.returncode

    def communicate(self, timeout: float | None = None) -> tuple[str | None, str | None]:
        """Read both pipes to their end and wait, within ``timeout`` seconds in all."""
        out: dict[str, str] = {}
        readers = [
            threading.Thread(target=lambda n=n, s=s: out.__setitem__(n, s.read()), daemon=True)
            for n, s in (("out", self.stdout), ("err", self.stderr))
            if s is not None
        ]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(timeout)
            if reader.is_alive():
                raise subprocess.TimeoutExpired(TRAIN_PY, timeout)
        self.wait(timeout)
        return out.get("out"), out.get("err")

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


class WarmServer:
    """The session's warm process and the thread that reads what it reports."""

    def __init__(self, timeout_s: float):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.env = dict(os.environ)
        self.log = os.path.join(tempfile.gettempdir(), "warm-start.log")  # what it says if it dies
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tests.warm_start", str(theirs.fileno())],
                cwd=ROOT,
                pass_fds=[theirs.fileno()],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        theirs.close()
        self.sock = ours
        self._lock = threading.Condition()
        self._started: dict[int, int] = {}  # request id -> pid
        self._exited: dict[int, int] = {}  # pid -> exit code
        self._next_id = 0
        self._send_lock = threading.Lock()
        ready, _, _ = select.select([ours], [], [], timeout_s)
        if not ready or not json.loads(ours.recv(MAX_MESSAGE) or b"{}").get("ready"):
            self.close()
            raise RuntimeError("the warm process did not start")
        threading.Thread(target=self._read, daemon=True).start()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            with self._lock:
                if not data:
                    self._exited.setdefault(-1, -1)  # gone: waiters give up
                    self._lock.notify_all()
                    return
                message = json.loads(data)
                if "started" in message:
                    self._started[message["started"]] = message["pid"]
                else:
                    self._exited[message["exited"]] = message["code"]
                self._lock.notify_all()

    def start(self, argv, cwd, env, new_session: bool, capture: bool) -> WarmProcess:
        out_r, out_w = os.pipe() if capture else (None, os.dup(1))
        err_r, err_w = os.pipe() if capture else (None, os.dup(2))
        request = {"argv": list(argv), "cwd": str(cwd), "env": dict(env)}
        with self._send_lock:
            request |= {"id": self._next_id, "new_session": new_session}
            self._next_id += 1
            try:
                _send(self.sock, request, [out_w, err_w])
            finally:
                os.close(out_w)
                os.close(err_w)
        with self._lock:
            if not self._lock.wait_for(
                lambda: request["id"] in self._started or -1 in self._exited, 30
            ):
                raise RuntimeError("the warm process did not fork the run")
            if request["id"] not in self._started:
                raise RuntimeError("the warm process is gone")
            pid = self._started.pop(request["id"])
        opened = [None if fd is None else open(fd, encoding=None) for fd in (out_r, err_r)]  # noqa: SIM115 - the process's pipes, closed with it
        return WarmProcess(self, pid, *opened)

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        with self._lock:
            self._lock.wait_for(lambda: pid in self._exited or -1 in self._exited, timeout)
            return self._exited.get(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(10)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class _Session:
    """The session's warm process: started on first use; once it fails, runs start cold."""

    server: WarmServer | None = None
    failed: str | None = None  # why runs start cold from now on

    @classmethod
    def get(cls, timeout_s: float) -> WarmServer | None:
        if cls.server is not None and not cls.server.alive():
            code, log = cls.server.proc.returncode, cls.server.log
            cls.server.close()
            with open(log, errors="replace") as said:
                cls.failed = f"the warm process exited with {code}: {said.read()[-2000:]}"
            cls.server = None
        if cls.server is None and cls.failed is None:
            try:
                cls.server = WarmServer(timeout_s)
            except (OSError, RuntimeError) as e:
                cls.failed = f"the warm process did not start: {e}"
        return cls.server


def warm(argv: Sequence[str], env: Mapping[str, str]) -> bool:
    """Whether the run ``argv`` with ``env`` may start warm: ``train.py`` under this Python,
    and no variable read at import time differs from the warm process's."""
    if len(argv) < 2 or argv[0] != sys.executable:
        return False
    if os.path.abspath(os.path.join(ROOT, argv[1])) != TRAIN_PY:
        return False
    base = _Session.server.env if _Session.server is not None else os.environ
    keys = {k for k in set(env) | set(base) if k.startswith(IMPORT_TIME)}
    return all((env.get(k) or None) == (base.get(k) or None) for k in keys)  # "" means unset


def start(
    argv: Sequence[str],
    cwd: Path | str,
    env: Mapping[str, str],
    *,
    new_session: bool = False,
    capture: bool = True,
    cold: bool = False,
    timeout_s: float = 120,
):
    """A started run of ``argv``: forked warm where :func:`warm` allows and the test does not
    ask for a ``cold`` start, else a cold :class:`subprocess.Popen` (text pipes when
    ``capture``)."""
    if not cold and warm(argv, env):
        server = _Session.get(timeout_s)
        if server is not None:
            STARTED["warm"] += 1
            return server.start(argv, cwd, env, new_session, capture)
    STARTED["cold"] += 1
    pipe = subprocess.PIPE if capture else None
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdout=pipe,
        stderr=pipe,
        text=True,
        start_new_session=new_session,
        preexec_fn=_hangup_at_default,
    )


def _hangup_at_default() -> None:
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def lost() -> str | None:
    """Why runs started cold after the warm process was lost, if it was."""
    return _Session.failed


def stop() -> None:
    """End the session's warm process (its runs are their tests' to end)."""
    if _Session.server is not None:
        _Session.server.close()
        _Session.server = None


if __name__ == "__main__":
    serve(socket.socket(fileno=int(sys.argv[1])))
