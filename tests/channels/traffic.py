"""Synthetic actor traffic for channel tests: every value says where it came from."""

from __future__ import annotations

import random
import time

import torch

from isaacgymenvs_gmi.channels import Dispenser, experience_kinds

OBS, STATES, ACT = 5, 3, 2
KINDS = experience_kinds(OBS, STATES, ACT)


def step_values(actor: int, seq: int, t: int, envs: int) -> dict[str, torch.Tensor]:
    """Step ``t`` of chunk ``seq`` of ``actor``: distinct, reproducible values per kind."""
    base = actor * 1_000_000 + seq * 1_000 + t
    out = {}
    for i, kind in enumerate(KINDS):
        shape = (envs, *kind.shape)
        if kind.dtype == torch.bool:
            out[kind.name] = (torch.arange(envs) + base + i) % 3 == 0
        elif kind.dtype == torch.int64:
            out[kind.name] = torch.full(shape, seq, dtype=torch.int64)
        else:
            ramp = torch.arange(torch.Size(shape).numel(), dtype=torch.float32).view(shape)
            out[kind.name] = ramp + float(base) + 0.5 * i
    return out


def expected_chunk(actor: int, seq: int, steps: int, envs: int) -> dict[str, torch.Tensor]:
    per_step = [step_values(actor, seq, t, envs) for t in range(steps)]
    return {k.name: torch.stack([s[k.name] for s in per_step]) for k in KINDS}


def push_chunk(dispenser: Dispenser, seq: int, envs: int) -> None:
    """Push chunk ``seq`` of the dispenser's actor, step by step, without pauses."""
    for t in range(dispenser.chunk_steps):
        dispenser.push(step_values(dispenser.actor, seq, t, envs))


def produce(
    dispenser: Dispenser, chunks: int, envs: int, seed: int, jitter_s: float, device: str = "cpu"
) -> None:
    """Push ``chunks`` whole chunks (made on ``device``), with random pauses between steps."""
    rng = random.Random(seed)
    for seq in range(chunks):
        for t in range(dispenser.chunk_steps):
            step = step_values(dispenser.actor, seq, t, envs)
            dispenser.push({k: v.to(device) for k, v in step.items()})
            if jitter_s and rng.random() < 0.3:
                time.sleep(rng.random() * jitter_s)
