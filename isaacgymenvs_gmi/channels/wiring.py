"""The channels between a run's GMIs: a route from every actor to every trainer and the first
trainer's weights board; their shape for a plan, and how each route travels.

Inside a node they live in shared memory: trainers make them and publish them in the run's
signed store, actors attach, and the names are removed once everyone has mapped them. Between
GMIs on one GPU a route keeps its data in device memory opened by CUDA IPC (``ipc``; the weights
board stays in host memory). Between nodes (or with ``gmi.async.transport=p2p``) each end keeps
a private copy that point-to-point pumps mirror (:mod:`.p2p`), started by :meth:`connect` once
every GMI is ready. In one process every role shares private memory (the twin).
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Literal

from isaacgymenvs_gmi.comm.routing import ipc_possible
from isaacgymenvs_gmi.comm.store import Store
from isaacgymenvs_gmi.config.async_mode import AsyncSettings
from isaacgymenvs_gmi.placement.run_plan import RunPlan

from .kinds import KindSpec, experience_kinds
from .p2p import BoardReceiver, BoardSender, PointToPoint, RouteDownlink, RouteUplink
from .roles import AsyncRoles
from .route import Route, RouteShape, route_shape
from .spec import channel_specs
from .weights import WeightsBoard

FIRST_WEIGHTS_TIMEOUT_S = 300.0
Transport = Literal["shm", "ipc", "p2p"]  # how one actor -> trainer route travels


def route_key(actor: int, trainer: int) -> str:
    return f"async/route/{actor}/{trainer}"


WEIGHTS_KEY = "async/weights"


@dataclass
class TrainerLinks:
    """A trainer's ends: actor -> route, and the weights board (first trainer only).
    ``remote``: the actors reached point to point."""

    routes: dict[int, Route]
    board: WeightsBoard | None
    names: list[str] = field(default_factory=list)  # segment paths still to unlink
    remote: tuple[int, ...] = ()
    pumps: list = field(default_factory=list)

    def unlink(self) -> None:
        for path in self.names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.names = []

    def connect(self, link: PointToPoint) -> None:
        """Start mirroring the remote actors' routes (and the board, on the first trainer)."""
        for actor in self.remote:
            self.pumps.append(RouteDownlink(self.routes[actor], link, actor))
            if self.board is not None:
                self.pumps.append(BoardSender(self.board, link, actor))

    def close(self) -> None:
        """Send the remote actors the end of every stream (after the run's end)."""
        for pump in self.pumps:
            pump.close()
        self.pumps = []


@dataclass
class ActorLinks:
    """An actor's ends: one route per trainer of ``trainers`` (the first publishes the weights)
    and the weights board. ``remote``: the trainers reached point to point."""

    routes: list[Route]
    board: WeightsBoard
    trainers: tuple[int, ...] = ()
    remote: tuple[int, ...] = ()
    pumps: list = field(default_factory=list)

    def connect(self, link: PointToPoint) -> None:
        """Start mirroring to the remote trainers; with the first trainer remote, wait for its
        first policy (a fresh board holds zeros)."""
        for trainer, route in zip(self.trainers, self.routes, strict=True):
            if trainer in self.remote:
                self.pumps.append(RouteUplink(route, link, trainer, self.board.request_stop))
        if self.trainers and self.trainers[0] in self.remote:
            receiver = BoardReceiver(self.board, link, self.trainers[0])
            self.pumps.append(receiver)
            deadline = time.monotonic() + FIRST_WEIGHTS_TIMEOUT_S
            while not self.board.published:
                if receiver.error is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"no policy from the first trainer (GMI {self.trainers[0]})"
                    ) from receiver.error
                time.sleep(0.001)

    def close(self) -> None:
        """Send what is left, then wait for the trainers to end their streams."""
        for pump in self.pumps:
            pump.close()
        self.pumps = []


def _remote(transports: dict[int, Transport]) -> tuple[int, ...]:
    return tuple(p for p, t in transports.items() if t == "p2p")


def _shape(how: Transport, shape: RouteShape) -> RouteShape:
    """A route's shape over ``how``: with its data apart (in GPU memory) for ``ipc``."""
    return shape.data_apart() if how == "ipc" else shape


def open_trainer_links(
    rank: int,
    roles: AsyncRoles,
    shape: RouteShape,
    numel: int,
    store: Store,
    transports: dict[int, Transport],
    device: str = "cpu",
) -> TrainerLinks:
    """``transports``: how each actor is reached; ``device``: where ``ipc`` routes keep their
    data (this trainer's GPU)."""
    links = TrainerLinks({}, None, remote=_remote(transports))
    try:
        for actor in roles.actors:
            how = transports[actor]
            if how == "p2p":
                links.routes[actor] = Route.in_process(shape)
                continue
            where = device if how == "ipc" else "cpu"
            route, paths = Route.create(_shape(how, shape), store, route_key(actor, rank), where)
            links.routes[actor] = route
            links.names.extend(paths)
        if rank == roles.trainers[0]:
            links.board, path = WeightsBoard.create(numel, store, WEIGHTS_KEY)
            links.names.append(path)
    except BaseException:
        links.unlink()
        raise
    return links


def open_actor_links(
    rank: int,
    roles: AsyncRoles,
    shape: RouteShape,
    numel: int,
    store: Store,
    transports: dict[int, Transport],
    device: str = "cpu",
) -> ActorLinks:
    """``transports``: how each trainer is reached; ``device``: this actor's GPU, where
    ``ipc`` routes are opened."""
    remote = _remote(transports)
    routes = [
        Route.in_process(shape)
        if transports[t] == "p2p"
        else Route.attach(
            _shape(transports[t], shape),
            store,
            route_key(rank, t),
            device if transports[t] == "ipc" else "cpu",
        )
        for t in roles.trainers
    ]
    if roles.trainers[0] in remote:
        board = WeightsBoard.in_process(numel)
    else:
        board = WeightsBoard.attach(numel, store, WEIGHTS_KEY)
    return ActorLinks(routes, board, roles.trainers, remote)


def in_process_links(
    roles: AsyncRoles, shape: RouteShape, numel: int
) -> tuple[dict[int, TrainerLinks], dict[int, ActorLinks]]:
    """Every role's ends over private memory, for a run in one process."""
    board = WeightsBoard.in_process(numel)
    routes = {(a, t): Route.in_process(shape) for a in roles.actors for t in roles.trainers}
    trainers = {
        t: TrainerLinks(
            {a: routes[a, t] for a in roles.actors}, board if t == roles.trainers[0] else None
        )
        for t in roles.trainers
    }
    actors = {
        a: ActorLinks([routes[a, t] for t in roles.trainers], board, roles.trainers)
        for a in roles.actors
    }
    return trainers, actors


def chunk_steps_of(plan: RunPlan, settings: AsyncSettings) -> int:
    """Env steps per chunk of experience (``gmi.async.chunk_steps``, else the horizon)."""
    return settings.chunk_steps or plan.train.horizon_length


def kinds_of(plan: RunPlan) -> tuple[KindSpec, ...]:
    """The kinds of experience a step of ``plan``'s task carries, in order (states only with
    a central value)."""
    obs, states, actions = plan.dims
    return experience_kinds(obs, states if plan.train.central_value else 0, actions)


def route_shape_for(plan: RunPlan, settings: AsyncSettings) -> RouteShape:
    """The shape of every actor -> consumer route of ``plan`` (``gmi.channels``; chunk and
    ring from ``settings``, the async mode's, or their defaults in a mode without them)."""
    channels = channel_specs(plan.gmi.channels, kinds_of(plan))
    return route_shape(
        channels,
        plan.num_envs,
        chunk_steps_of(plan, settings),
        settings.ring_slots,
        compress=plan.gmi.channels == "multi",
    )


def peer_transports(
    plan: RunPlan, asked: str, rank: int, peers: tuple[int, ...], on_gpu: bool
) -> dict[int, Transport]:
    """How GMI ``rank`` reaches each of ``peers`` (``gmi.async.transport``): ``p2p`` across
    nodes (or everywhere when asked), ``ipc`` on the same GPU where GMIs can open each other's
    device memory (unless ``shm`` is asked), else ``shm``."""
    here = plan.layout.place(rank)
    ipc = asked in ("auto", "ipc") and ipc_possible(on_gpu, plan.gmi_backend)
    out: dict[int, Transport] = {}
    for peer in peers:
        there = plan.layout.place(peer)
        if asked == "p2p" or there.node != here.node:
            out[peer] = "p2p"
        else:
            out[peer] = "ipc" if ipc and there.device == here.device else "shm"
    return out


def describe_transports(transports: dict[int, Transport]) -> str:
    """`` (1 point to point, 2 CUDA IPC)``: the routes not over host shared memory."""
    names = {"p2p": "point to point", "ipc": "CUDA IPC"}
    counts = [
        f"{sum(t == kind for t in transports.values())} {name}"
        for kind, name in names.items()
        if kind in transports.values()
    ]
    return f" ({', '.join(counts)})" if counts else ""
