"""What a serving GMI does with its own experience back from the channels: check every chunk
arrives once and in order, count episodes, and (``serve.record``) record it."""

from __future__ import annotations

import torch

from isaacgymenvs_gmi.channels import Chunk, KindSpec, Ledger
from isaacgymenvs_gmi.channels.recording import ExperienceRecorder


def recorder_kinds(kinds: tuple[KindSpec, ...]) -> dict[str, tuple[tuple[int, ...], str]]:
    """The recorder's kind table (per-env shape, numpy dtype name) for channel kinds."""
    return {k.name: (k.shape, torch.empty((), dtype=k.dtype).numpy().dtype.name) for k in kinds}


class ServeSink:
    """Takes a serving GMI's whole chunks (kind -> (T, N, *shape)) in order."""

    def __init__(self, recorder: ExperienceRecorder | None = None):
        self.recorder = recorder
        self.ledger = Ledger()
        self.episodes = 0
        self.return_sum = 0.0
        self.length_sum = 0.0

    def take(self, chunk: Chunk) -> None:
        self.ledger.accept(chunk.actor, chunk.route_seq, chunk.transitions)
        data = chunk.data
        done = data["terminated"] | data["truncated"]
        self.episodes += int(done.sum())
        self.return_sum += float(data["episode_return"][done].double().sum())
        self.length_sum += float(data["episode_length"][done].double().sum())
        if self.recorder is not None:
            self.recorder.write(data, policy_version=int(data["version"].max()))

    @property
    def consumed(self) -> int:
        """Transitions taken."""
        return self.ledger.consumed
