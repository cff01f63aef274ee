"""The lead trainer's ``async/*`` TensorBoard tags and progress line after each epoch."""

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
    """Write the tags at ``agent.frame`` into ``agent.writer`` and say the progress line;
    ``lag``: this trainer's, the counters every trainer's."""
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
    epochs, lags = (agent.epoch_num, agent.max_epochs), (lag.low, lag.mean, lag.high)
    queue = (counters.depth, counters.dropped)
    say(progress_line(*epochs, rates, lags, *queue, reward, elapsed_s=elapsed_s))
