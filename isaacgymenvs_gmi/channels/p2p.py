"""Point-to-point links for routes and the weights board between GMIs that share no memory
(actors on another node than the trainers; ``gmi.async.transport=p2p`` forces it in a node).

Each end keeps its own copy of the route (and board) in private memory, used exactly as over
shared memory; pump threads mirror the changes: actor -> trainer (``ROUTE_TAG``) every published
slot whole and the control words; trainer -> actor (``CREDIT_TAG``) each ring's tail (credits);
first trainer -> actor (``WEIGHTS_TAG``) each new policy, then the stop request.

A message is a header of ``header_width`` int64 (kind, then its numbers), then for a block or a
policy its payload. Every stream sends at least one message a second (a receiver never nears the
process group's timeout while its peer lives) and ends with ``CLOSE``. A dead peer breaks its
streams: the trainer counts that actor stopped, the actor stops. Messages go through a
:class:`PointToPoint`: torch.distributed (gloo, host memory) or queues in one process (the twin).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import torch

from .route import ACTOR_PID, ACTOR_STATE, CONTROL_LINES, STOPPED, Route
from .weights import WeightsBoard

log = logging.getLogger(__name__)

ROUTE_TAG, CREDIT_TAG, WEIGHTS_TAG = 11, 12, 13
BLOCK, CONTROL, TAILS, WEIGHTS, STOP, BEAT, CLOSE = range(1, 8)
HEARTBEAT_S = 1.0
IDLE_S = (50e-6, 2e-3)  # a pump's pause when idle grows from the first to the second
JOIN_S = 120.0  # how long closing waits for the other end's last messages


class PointToPoint(Protocol):
    def send(self, t: torch.Tensor, peer: int, tag: int) -> None: ...  # blocking

    def recv(self, t: torch.Tensor, peer: int, tag: int) -> None: ...  # into t, blocking


class TorchPointToPoint:
    """send/recv on torch.distributed's default process group (gloo: host tensors)."""

    def send(self, t: torch.Tensor, peer: int, tag: int) -> None:
        torch.distributed.send(t, peer, tag=tag)

    def recv(self, t: torch.Tensor, peer: int, tag: int) -> None:
        torch.distributed.recv(t, peer, tag=tag)


class QueueHub:
    """The in-process twin's wires: one queue per (sender, receiver, tag)."""

    def __init__(self, timeout_s: float = 60.0):
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._queues: dict[tuple[int, int, int], queue.Queue] = {}

    def wire(self, src: int, dst: int, tag: int) -> queue.Queue:
        with self._lock:
            return self._queues.setdefault((src, dst, tag), queue.Queue())

    def end(self, rank: int) -> QueuePointToPoint:
        return QueuePointToPoint(rank, self)


class QueuePointToPoint:
    """GMI ``rank``'s end of a :class:`QueueHub`: the same messages, copied through queues."""

    def __init__(self, rank: int, hub: QueueHub):
        self.rank, self.hub = rank, hub

    def send(self, t: torch.Tensor, peer: int, tag: int) -> None:
        self.hub.wire(self.rank, peer, tag).put(t.clone())

    def recv(self, t: torch.Tensor, peer: int, tag: int) -> None:
        try:
            t.copy_(self.hub.wire(peer, self.rank, tag).get(timeout=self.hub.timeout_s))
        except queue.Empty:
            raise RuntimeError(f"nothing from GMI {peer} (tag {tag}) in time") from None


def header_width(route: Route) -> int:
    return 1 + max(len(route.rings), CONTROL_LINES)


class _Pumps:
    """Threads moving one stream pair; ``on_error()`` is called once if one of them fails."""

    def __init__(self, link: PointToPoint, peer: int, width: int, on_error: Callable[[], None]):
        self.link, self.peer, self.width, self.on_error = link, peer, width, on_error
        self.error: BaseException | None = None
        self.closing = threading.Event()
        self._threads: list[threading.Thread] = []

    def run(self, *loops: Callable[[], None]) -> None:
        for loop in loops:
            thread = threading.Thread(target=self._guarded, args=(loop,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _guarded(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except Exception as err:  # noqa: BLE001 - a broken link: the owner decides
            if self.error is None:
                self.error = err
                log.warning("link with GMI %d broken: %s", self.peer, str(err).splitlines()[0])
                self.on_error()

    def close(self, timeout_s: float = JOIN_S) -> None:
        """Send the last messages and wait (bounded) for the other end's."""
        self.closing.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def send_header(self, kind: int, numbers: list[int], tag: int) -> None:
        header = torch.zeros(self.width, dtype=torch.int64)
        header[: 1 + len(numbers)] = torch.tensor([kind, *numbers], dtype=torch.int64)
        self.link.send(header, self.peer, tag)

    def messages(self, tag: int) -> Iterator[tuple[int, torch.Tensor]]:
        """(kind, header) of each message received on ``tag``, until ``CLOSE``."""
        while True:
            header = torch.empty(self.width, dtype=torch.int64)
            self.link.recv(header, self.peer, tag)
            if (kind := int(header[0])) == CLOSE:
                return
            yield kind, header


def _pause(busy: bool, idle: float) -> float:
    if busy:
        return IDLE_S[0]
    time.sleep(idle)
    return min(idle * 2, IDLE_S[1])


class RouteUplink(_Pumps):
    """The actor's end of a route to ``trainer``: ``route`` is the actor's private copy."""

    def __init__(self, route: Route, link: PointToPoint, trainer: int, on_error=lambda: None):
        super().__init__(link, trainer, header_width(route), on_error)
        self.route = route
        self.run(self._send_loop, self._credit_loop)

    def _send_loop(self) -> None:
        rings, sent = self.route.rings, [0] * len(self.route.rings)
        words, last, idle = None, 0.0, IDLE_S[0]
        while True:
            closing = self.closing.is_set()  # before the pass: it sends all published before
            # The control words are read before the blocks, so every chunk they count goes out
            # below, ahead of them (read after, a chunk finished in between would be counted at
            # the trainer before its blocks left, and lost with them if the actor dies).
            now = [self.route.control(w) for w in range(CONTROL_LINES)]
            busy = False
            for i, ring in enumerate(rings):
                while sent[i] < ring.head:
                    self.send_header(BLOCK, [i], ROUTE_TAG)
                    self.link.send(ring.slot(sent[i]), self.peer, ROUTE_TAG)
                    sent[i] += 1
                    busy = True
            if now != words or closing or time.monotonic() - last > HEARTBEAT_S:
                self.send_header(CONTROL, now, ROUTE_TAG)
                words, last = now, time.monotonic()
            if closing:
                self.send_header(CLOSE, [], ROUTE_TAG)
                return
            idle = _pause(busy, idle)

    def _credit_loop(self) -> None:
        for kind, header in self.messages(CREDIT_TAG):
            if kind == TAILS:
                for i, ring in enumerate(self.route.rings):
                    ring.mirror_released(int(header[1 + i]))


class RouteDownlink(_Pumps):
    """The trainer's end of a route from ``actor``: ``route`` is the trainer's private copy.
    A broken link marks the actor stopped there."""

    def __init__(self, route: Route, link: PointToPoint, actor: int):
        super().__init__(link, actor, header_width(route), self._lost)
        self.route = route
        route.set_control(ACTOR_PID, 0)  # its process is on another node: never looked up
        self.run(self._recv_loop, self._credit_loop)

    def _lost(self) -> None:
        self.route.set_control(ACTOR_STATE, STOPPED)

    def _recv_loop(self) -> None:
        for kind, header in self.messages(ROUTE_TAG):
            if kind == BLOCK:
                ring = self.route.rings[int(header[1])]
                self.link.recv(ring.slot(ring.head), self.peer, ROUTE_TAG)
                ring.mirror_published()
            elif kind == CONTROL:
                for word in range(CONTROL_LINES):
                    if word != ACTOR_PID:
                        self.route.set_control(word, int(header[1 + word]))

    def _credit_loop(self) -> None:
        tails, last, idle = None, 0.0, IDLE_S[0]
        while True:
            closing = self.closing.is_set()
            now = [ring.tail for ring in self.route.rings]
            busy = now != tails
            if busy or time.monotonic() - last > HEARTBEAT_S:
                self.send_header(TAILS, now, CREDIT_TAG)
                tails, last = now, time.monotonic()
            if closing:
                self.send_header(CLOSE, [], CREDIT_TAG)
                return
            idle = _pause(busy, idle)


class BoardSender(_Pumps):
    """The first trainer's weights, and its stop request, to the board copy of ``actor``."""

    def __init__(self, board: WeightsBoard, link: PointToPoint, actor: int):
        super().__init__(link, actor, 2, lambda: None)
        self.board = board
        self._staging = torch.empty(board.numel, dtype=torch.float32)
        self.run(self._loop)

    def _loop(self) -> None:
        have, stop_sent, last, idle = -1, False, 0.0, IDLE_S[0]  # version 0 is a policy
        while True:
            closing = self.closing.is_set()
            version = self.board.read_newer(have, self._staging)
            busy = version is not None
            if busy:
                self.send_header(WEIGHTS, [version], WEIGHTS_TAG)
                self.link.send(self._staging, self.peer, WEIGHTS_TAG)
                have, last = version, time.monotonic()
            if self.board.stopping and not stop_sent:
                self.send_header(STOP, [], WEIGHTS_TAG)
                stop_sent, last = True, time.monotonic()
            elif time.monotonic() - last > HEARTBEAT_S:
                self.send_header(BEAT, [], WEIGHTS_TAG)
                last = time.monotonic()
            if closing:
                self.send_header(CLOSE, [], WEIGHTS_TAG)
                return
            idle = _pause(busy, idle)


class BoardReceiver(_Pumps):
    """An actor's copy of the first trainer's board, kept current; a broken link asks the
    actor to stop."""

    def __init__(self, board: WeightsBoard, link: PointToPoint, trainer: int):
        super().__init__(link, trainer, 2, board.request_stop)
        self.board = board
        self._staging = torch.empty(board.numel, dtype=torch.float32)
        self.run(self._loop)

    def _loop(self) -> None:
        for kind, header in self.messages(WEIGHTS_TAG):
            if kind == WEIGHTS:
                self.link.recv(self._staging, self.peer, WEIGHTS_TAG)
                self.board.publish(self._staging, int(header[1]))
            elif kind == STOP:
                self.board.request_stop()
