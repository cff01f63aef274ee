"""The channels between an async run's GMIs: a route from every actor to every trainer and the
first trainer's weights board, in shared memory (GMIs in processes) or private memory (every
role in one process, the twin). Trainers make them and publish where they are in the run's
signed store; actors attach; the names are removed once everyone has mapped them, so nothing
is left behind whatever happens next."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

from isaacgymenvs_gmi.channels import Route, RouteShape, WeightsBoard
from isaacgymenvs_gmi.comm.store import Store

from .roles import AsyncRoles


def route_key(actor: int, trainer: int) -> str:
    return f"async/route/{actor}/{trainer}"


WEIGHTS_KEY = "async/weights"


@dataclass
class TrainerLinks:
    """A trainer's ends: actor -> route, and the weights board (first trainer only)."""

    routes: dict[int, Route]
    board: WeightsBoard | None
    names: list[str] = field(default_factory=list)  # segment paths still to unlink

    def unlink(self) -> None:
        for path in self.names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        self.names = []


@dataclass
class ActorLinks:
    """An actor's ends: one route per trainer (in trainer order) and the weights board."""

    routes: list[Route]
    board: WeightsBoard


def open_trainer_links(
    rank: int, roles: AsyncRoles, shape: RouteShape, numel: int, store: Store
) -> TrainerLinks:
    links = TrainerLinks({}, None)
    try:
        for actor in roles.actors:
            route, path = Route.create(shape, store, route_key(actor, rank))
            links.routes[actor] = route
            links.names.append(path)
        if rank == roles.trainers[0]:
            links.board, path = WeightsBoard.create(numel, store, WEIGHTS_KEY)
            links.names.append(path)
    except BaseException:
        links.unlink()
        raise
    return links


def open_actor_links(
    rank: int, roles: AsyncRoles, shape: RouteShape, numel: int, store: Store
) -> ActorLinks:
    routes = [Route.attach(shape, store, route_key(rank, t)) for t in roles.trainers]
    return ActorLinks(routes, WeightsBoard.attach(numel, store, WEIGHTS_KEY))


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
    actors = {a: ActorLinks([routes[a, t] for t in roles.trainers], board) for a in roles.actors}
    return trainers, actors
