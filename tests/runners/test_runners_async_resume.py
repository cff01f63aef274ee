"""Checkpoints across modes: a sync checkpoint resumes in async mode, the async one resumes in
sync mode and plays with test=True; the policy carries over each time (the first rewards after
the switch are a balancing policy's, not a fresh one's)."""

from __future__ import annotations

import re

from isaacgymenvs_gmi.launch import plan_run, run

NO_GPU = (False, ("cpu",), False)
EPISODE = 32  # Cartpole episodes last 500 steps: 32 epochs of 16 steps see every env end one
# The first mean reward reported after a switch comes from the first episodes to end, i.e. the
# resumed policy's early failures: 290-500 here. A restarted policy's first ones score ~20 (random
# play). Played deterministically, a trained policy scored 369-500 (see
# test_rl_training.PLAYED_FLOOR), a one-epoch one ~57.
CARRIED_OVER = 150.0
PLAYED_FLOOR = 200.0


def _epoch(checkpoint: str) -> int:
    found = re.search(r"_ep_(\d+)_", checkpoint)
    assert found, checkpoint
    return int(found.group(1))


def test_checkpoints_move_between_sync_and_async_and_play(trained_cartpole, compose_cfg, tmp_path):
    start = _epoch(trained_cartpole)
    to_async = compose_cfg(
        "task=Cartpole",
        "gmi.per_gpu=2",  # one trainer, one actor: each epoch is a chunk of that actor
        "gmi.mode=async",
        "gmi.async.serial=true",
        f"checkpoint={trained_cartpole}",
        f"max_iterations={start + EPISODE + 2}",
        f"train_dir={tmp_path / 'async'}",
    )
    in_async = run(to_async, plan_run(to_async, platform=NO_GPU))
    assert in_async.history and in_async.history[0][2] > CARRIED_OVER  # resumed, not restarted
    assert _epoch(in_async.checkpoint) == start + EPISODE + 2  # epochs continue

    to_sync = compose_cfg(
        "task=Cartpole",
        f"checkpoint={in_async.checkpoint}",
        f"max_iterations={start + 2 * EPISODE + 4}",
        f"train_dir={tmp_path / 'sync'}",
    )
    in_sync = run(to_sync, plan_run(to_sync, platform=NO_GPU))
    assert in_sync.history and in_sync.history[0][2] > CARRIED_OVER
    assert _epoch(in_sync.checkpoint) == start + 2 * EPISODE + 4

    play = compose_cfg("task=Cartpole", "test=True", f"checkpoint={in_async.checkpoint}")
    played = run(play, plan_run(play, platform=NO_GPU))
    assert played.mean_reward > PLAYED_FLOOR
