"""Humanoid and Anymal: mean episode reward over wall time with PPO on this machine's CPU.

Each task trains with its upstream task and train configs, scaled to a small CPU (fewer envs,
a matching minibatch, a fixed epoch budget), on the `mujoco` backend, 1 GMI; the curve is the
rl-games reward meter against wall time. Plot: bench/results/task_reward_vs_time.png.

    python bench/task_learning.py [--tasks Humanoid Anymal] [--epochs 150]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, compose, plot_reward_curves, write_result

from isaacgymenvs_gmi.launch import plan_run, run

# CPU scale per task: envs and minibatch (the batch is horizon x envs)
CPU_SETTINGS = {
    "Humanoid": ["num_envs=1024", "train.params.config.minibatch_size=8192"],
    "Anymal": ["num_envs=1024", "train.params.config.minibatch_size=6144"],
}


def train(task: str, epochs: int):
    overrides = [f"task={task}", *CPU_SETTINGS[task], f"max_iterations={epochs}"]
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(*overrides, f"train_dir={d}")
        return overrides, run(cfg, plan_run(cfg))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=list(CPU_SETTINGS), choices=list(CPU_SETTINGS))
    p.add_argument("--epochs", type=int, default=150)
    args = p.parse_args()
    payload, panels = {}, {}
    for task in args.tasks:
        overrides, res = train(task, args.epochs)
        first, last = res.history[0], res.history[-1]
        payload[task] = {
            "overrides": overrides,
            "epochs": args.epochs,
            "first_reward": first[2],
            "final_reward": res.mean_reward,
            "best_reward": max(r for _, _, r in res.history),
            "wall_s": last[1],
            "curve": res.history,
        }
        panels[task] = res.history
        print(f"{task}: reward {first[2]:.1f} -> {res.mean_reward:.1f} in {last[1]:.0f} s")
    write_result("task_learning", payload)
    plot_reward_curves(panels, RESULTS / "task_reward_vs_time.png", "mujoco backend, CPU")


if __name__ == "__main__":
    main()
