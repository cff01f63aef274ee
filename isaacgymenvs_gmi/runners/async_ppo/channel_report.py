"""What the lead trainer shows of the channels after each epoch: the ``async/*`` TensorBoard
tags (throughput, queue depth, drops, policy version and lag) and the progress line."""

from __future__ import annotations

from typing import Any

from isaacgymenvs_gmi.channels import LagStats
from isaacgymenvs_gmi.gmi.status import say

from .accounting import ChannelCounters
from .telemetry import Rates, progress_line


def report_channels(
    agent: Any,
    rates: Rates,
    counters: ChannelCounters,
    lag: LagStats,
    version: int,
    reward: float | None,
    elapsed_s: float,
) -> None:
    """Write the tags at ``agent.frame`` into ``agent.writer`` (taking ``lag``'s recent
    values) and say the progress line; ``lag``: this trainer's, the counters every trainer's."""
    writer, frame = agent.writer, agent.frame
    for tag, value in (
        ("async/pps", rates.pps),
        ("async/ttop", rates.ttop),
        ("async/env_steps_per_s", rates.pps),
        ("async/queue_depth", counters.depth),
        ("async/dropped_transitions", counters.dropped),
        ("async/policy_version", version),
    ):
        writer.add_scalar(tag, value, frame)
    recent = lag.take_recent()
    if recent:
        writer.add_scalar("async/lag_mean", sum(recent) / len(recent), frame)
        writer.add_scalar("async/lag_max", max(recent), frame)
    for actor, value in rates.per_actor.items():
        writer.add_scalar(f"async/pps_actor{actor}", value, frame)
    say(
        progress_line(
            agent.epoch_num,
            agent.max_epochs,
            rates,
            (lag.low, lag.mean, lag.high),
            counters.depth,
            counters.dropped,
            reward,
            elapsed_s=elapsed_s,
        )
    )
