"""What ``gmi.mode=async`` needs of the layout, the transports and the train config, checked
before any process starts."""

from __future__ import annotations

from isaacgymenvs_gmi.channels.batcher import batch_geometry
from isaacgymenvs_gmi.comm import ipc_possible, mrr_valid
from isaacgymenvs_gmi.config import ConfigError
from isaacgymenvs_gmi.runners.mode import ModeFacts, ModeTerms
from isaacgymenvs_gmi.runners.shared.actor_checks import check_actor_config


def check_async(facts: ModeFacts) -> ModeTerms:
    """Refuses (``ConfigError`` naming the key) what async PPO cannot run; the actor GMIs are
    expendable."""
    gmi, layout = facts.gmi, facts.layout
    settings = facts.settings
    if settings.transport == "ipc" and not ipc_possible(facts.cuda, facts.backend):
        raise ConfigError(
            "gmi.async.transport",
            "ipc",
            f"needs actors and trainers sharing a GPU under MPS or direct sharing (here: "
            f"{facts.backend}{'' if facts.cuda else ', no GPU'}); use auto, shm or p2p",
        )
    check_actor_config("async", facts.train_params)
    world = layout.world_size
    if world < 2:
        why = "needs at least 2 GMIs (a trainer and an actor), e.g. gmi.per_gpu=3"
        raise ConfigError("gmi.mode", "async", why)
    if not 1 <= gmi.trainers < world:
        raise ConfigError("gmi.trainers", gmi.trainers, f"must be >= 1 and < the {world} GMIs")
    if gmi.trainers > 1:
        _check_trainer_team(facts)
    if settings.serial and settings.transport != "auto":
        why = "must be auto with gmi.async.serial=true (one process: in-process channels)"
        raise ConfigError("gmi.async.transport", settings.transport, why)
    actors = world - gmi.trainers
    if settings.min_actors > actors:
        raise ConfigError(
            "gmi.async.min_actors", settings.min_actors, f"must be <= the {actors} actor GMIs"
        )
    num_envs = facts.num_envs
    if isinstance(num_envs, int) and not isinstance(num_envs, bool):
        chunk = settings.chunk_steps or facts.train.horizon_length
        try:
            batch_geometry(facts.train.horizon_length, num_envs, chunk)
        except ValueError as err:
            raise ConfigError("gmi.async.chunk_steps", chunk, str(err)) from None
    trainers = tuple(range(gmi.trainers))  # every actor waits on them: cores of their own
    return ModeTerms(
        expendable=tuple(range(gmi.trainers, world)),
        min_alive=settings.min_actors,
        pinned=trainers,
        expendable_what="actor",
        min_alive_key="gmi.async.min_actors",
    )


def _check_trainer_team(facts: ModeFacts) -> None:
    gmi = facts.gmi
    try:
        trainers = facts.layout.first(gmi.trainers)
    except ValueError as err:
        raise ConfigError("gmi.trainers", gmi.trainers, str(err)) from None
    if gmi.comm == "mrr" and not mrr_valid(trainers.mpl()):
        raise ConfigError(
            "gmi.comm",
            "mrr",
            f"the trainers' layout MPL={trainers.mpl()} cannot run MRR (use auto, mpr or har)",
        )
    if facts.settings.serial:
        why = "must be 1 with gmi.async.serial=true (one process runs one trainer)"
        raise ConfigError("gmi.trainers", gmi.trainers, why)
