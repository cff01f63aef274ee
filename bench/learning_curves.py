"""Cartpole time-to-reward and Ant reward over wall time, on this machine's CPU.

Cartpole: the upstream CartpolePPO config; the time (rl-games clock) until the mean episode
reward first reaches 400 of 500. Ant: the `make train` CPU settings; mean episode reward against
wall time, plotted with Cartpole to bench/results/reward_vs_time.png.

    python bench/learning_curves.py [--ant-epochs 300]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, compose, plot_reward_curves, write_result

from isaacgymenvs_gmi.launch import plan_run, run

ANT_CPU = ["num_envs=1024", "train.params.config.minibatch_size=8192"]


def train(*overrides: str):
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(*overrides, f"train_dir={d}")
        return run(cfg, plan_run(cfg))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ant-epochs", type=int, default=300)
    args = p.parse_args()
    cart = train("task=Cartpole")
    reached = next(((f, t) for f, t, r in cart.history if r >= 400), None)
    ant = train("task=Ant", *ANT_CPU, f"max_iterations={args.ant_epochs}")
    payload = {
        "cartpole": {
            "target_reward": 400,
            "time_to_target_s": reached and reached[1],
            "frames_to_target": reached and reached[0],
            "final_reward": cart.mean_reward,
            "curve": cart.history,
        },
        "ant": {
            "overrides": ANT_CPU,
            "epochs": args.ant_epochs,
            "final_reward": ant.mean_reward,
            "curve": ant.history,
        },
    }
    print(
        f"Cartpole reached 400 after {payload['cartpole']['time_to_target_s']:.1f} s; "
        f"Ant reward {ant.history[0][2]:.1f} -> {ant.mean_reward:.1f} in {ant.history[-1][1]:.0f} s"
    )
    write_result("learning_curves", payload)
    panels = {"Cartpole": cart.history, "Ant": ant.history}
    plot_reward_curves(panels, RESULTS / "reward_vs_time.png", "mujoco backend, CPU")


if __name__ == "__main__":
    main()
