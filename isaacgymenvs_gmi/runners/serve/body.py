"""The body of a serving GMI (``gmi.mode=serve``): every GMI an actor and none a trainer (the
paper's serving, Sec. 5.1).

Each GMI plays the checkpoint (or the initial policy) for ``serve.steps`` steps per env through
the same actor loop and channels as an async actor; its own collector takes the chunks back,
checks them exactly once, counts episodes and, with ``serve.record``, records them. At the end
GMI 0 merges every GMI's statistics (and the recording's manifest) and reports PPS.
"""

from __future__ import annotations

import contextlib
import logging
import math
import tempfile
import time

from isaacgymenvs_gmi.channels.route import PRODUCED_TRANSITIONS
from isaacgymenvs_gmi.config.async_mode import AsyncSettings
from isaacgymenvs_gmi.gmi.context import GmiContext
from isaacgymenvs_gmi.gmi.status import say
from isaacgymenvs_gmi.runners.result import RunResult

from .played import Played, summary_lines
from .settings import ServeSettings

log = logging.getLogger(__name__)
PROGRESS_EVERY_S = 10.0


def run_serve(ctx: GmiContext) -> RunResult | None:
    from isaacgymenvs_gmi.runners.shared.preamble import prepare_gmi

    plan, rank = ctx.plan, ctx.rank
    prepare_gmi(plan, plan.seed_of(rank))
    with tempfile.TemporaryDirectory(prefix="gmi-serve-") as scratch:
        played = _serve(ctx, scratch)
    everyone = [played]
    if ctx.group is not None:
        ctx.group.startup_barrier("serving done")  # GMIs finish at their own pace
        vectors = ctx.group.all_gather_vector(played.vector(), "serving statistics")
        everyone = [Played.from_vector(v) for v in vectors]
    if rank != 0:
        return None
    total = Played.merge(everyone)
    for line in summary_lines(everyone, plan.num_envs, total):
        say(line)
    if plan.mode_settings.record:
        _merge_recording(plan.mode_settings.record, len(everyone), total)
    stopped_by, rates = total.stopped_by or None, {"pps": total.pps}
    means = (total.mean_reward, total.mean_length)
    return RunResult(*means, total.steps, None, stopped_by=stopped_by, rates=rates)


def _serve(ctx: GmiContext, scratch: str) -> Played:
    """Play this GMI's share; its numbers for GMI 0."""
    from isaacgymenvs_gmi.channels import Collector, Route, WeightsBoard, flatten
    from isaacgymenvs_gmi.channels.wiring import ActorLinks, kinds_of, route_shape_for
    from isaacgymenvs_gmi.runners.shared.acting import build_actor

    plan, rank = ctx.plan, ctx.rank
    settings: ServeSettings = plan.mode_settings
    route = Route.in_process(route_shape_for(plan, AsyncSettings()))  # the channels' defaults
    links = lambda numel: ActorLinks([route], WeightsBoard.in_process(numel))  # noqa: E731
    # the collector runs between chunks in this process: a deadline would only split them
    actor, env = build_actor(ctx, rank, links, players=None, deadline_s=math.inf, train_dir=scratch)
    try:
        if plan.checkpoint:
            actor.agent.restore(plan.checkpoint)
        version = int(actor.agent.epoch_num)
        actor.board.publish(flatten(actor.modules), version)
        carried = kinds_of(plan)
        collector = Collector([rank], [route], carried)
        steps = settings.steps or int(env.max_episode_length)
        chunks = math.ceil(steps / actor.dispenser.chunk_steps)
        if rank == 0:
            source = plan.checkpoint or "the initial policy"
            say(
                f"serving {source} (policy version {version}) on every GMI: "
                f"{chunks * actor.dispenser.chunk_steps} steps x {plan.num_envs} envs each"
                + (f", recording to {settings.record}" if settings.record else "")
            )
        with _recorder(ctx, carried, version) as recorder:
            return _play(ctx, actor, collector, recorder, chunks)
    finally:
        env.close()


def _recorder(ctx: GmiContext, carried, version: int):
    from isaacgymenvs_gmi.channels.recording import ExperienceRecorder

    from .sink import recorder_kinds

    plan = ctx.plan
    if not plan.mode_settings.record:
        return contextlib.nullcontext()
    meta = {
        "task": plan.task_name,
        "checkpoint": plan.checkpoint,
        "policy_version": version,
        "seed": plan.seed_of(ctx.rank),
        "gmis": plan.world_size,
        "actions": "sampled from the policy (mu, sigma recorded); before clipping",
        "obs": "as the policy saw them, before its normalisation",
    }
    return ExperienceRecorder(
        plan.mode_settings.record,
        gmi=ctx.rank,
        num_envs=plan.num_envs,
        kinds=recorder_kinds(carried),
        shard_steps=max(plan.train.horizon_length, 256),
        meta=meta,
    )


def _play(ctx: GmiContext, actor, collector, recorder, chunks: int) -> Played:
    from .sink import ServeSink

    sink = ServeSink(recorder)
    started = time.monotonic()
    warm: tuple[float, int] | None = None  # (time, steps) after the first chunk
    last_report = started
    stopped_by = 0
    for _ in range(chunks):
        if (signum := ctx.stop_signal()) is not None:
            stopped_by = signum
            break
        actor.play_chunk()
        for chunk in collector.poll():
            sink.take(chunk)
        now = time.monotonic()
        if warm is None:
            warm = (now, actor.steps)
        elif ctx.rank == 0 and now - last_report >= PROGRESS_EVERY_S:
            last_report = now
            rate = (actor.steps - warm[1]) / (now - warm[0])
            say(
                f"serve: GMI 0 {actor.steps:,} steps | PPS {rate:,.0f} | episodes {sink.episodes:,}"
            )
    actor.finish()
    end = time.monotonic()
    if collector.partial():
        raise RuntimeError(f"GMI {ctx.rank}: {collector.partial()} chunk(s) did not arrive whole")
    timed_from, timed_steps = (started, 0) if warm is None or warm[1] == actor.steps else warm
    return Played(
        steps=actor.steps,
        timed_steps=actor.steps - timed_steps,
        timed_s=end - timed_from,
        episodes=sink.episodes,
        return_sum=sink.return_sum,
        length_sum=sink.length_sum,
        produced=actor.dispenser.routes[0].control(PRODUCED_TRANSITIONS),
        consumed=sink.consumed,
        stopped_by=stopped_by,
    )


def _merge_recording(folder: str, gmis: int, total: Played) -> None:
    from isaacgymenvs_gmi.channels.recording import merge_manifests

    manifest = merge_manifests(folder, expected_gmis=gmis)
    if manifest["transitions"] != total.consumed:
        raise RuntimeError(
            f"the recording holds {manifest['transitions']:,} transitions, "
            f"{total.consumed:,} were served"
        )
    say(
        f"recorded {manifest['transitions']:,} transitions to {folder}/manifest.json "
        f"(load: isaacgymenvs_gmi.channels.recording.load_recording(folder))"
    )
