"""ShadowHand with upstream's randomisation (``ShadowHandOpenAI_FF``'s block: noise, gravity,
per-world masses, friction and dof properties) against the same run without it: mean episode
reward after the same number of PPO epochs, each run from the same seed on this machine's CPU
(mujoco backend, 1 GMI). Prints the reward each run gains over its first report and the
randomised run's gain as a fraction of the plain run's. Plot:
bench/results/randomized_learning.png.

    python bench/randomized_learning.py [--epochs 100] [--envs 512]
"""

from __future__ import annotations

import argparse
import tempfile

from common import RESULTS, compose, plot_reward_curves, write_result

from isaacgymenvs_gmi.launch import plan_run, run


def train(randomize: bool, epochs: int, envs: int):
    overrides = [
        "task=ShadowHand",
        f"task.task.randomize={randomize}",
        f"num_envs={envs}",
        f"train.params.config.minibatch_size={envs * 8 // 4}",  # 4 minibatches per epoch
        f"max_iterations={epochs}",
        "seed=3",
    ]
    with tempfile.TemporaryDirectory() as d:
        cfg = compose(*overrides, f"train_dir={d}")
        return overrides, run(cfg, plan_run(cfg))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=100)
    p.add_argument("--envs", type=int, default=512)
    args = p.parse_args()
    payload, panels, gains = {}, {}, {}
    for name, randomize in (("plain", False), ("randomised", True)):
        overrides, res = train(randomize, args.epochs, args.envs)
        first, last = res.history[0], res.history[-1]
        gains[name] = res.mean_reward - first[2]
        payload[name] = {
            "overrides": overrides,
            "first_reward": first[2],
            "final_reward": res.mean_reward,
            "gain": gains[name],
            "wall_s": last[1],
            "curve": res.history,
        }
        panels[f"ShadowHand {name}"] = res.history
        print(f"{name}: reward {first[2]:.1f} -> {res.mean_reward:.1f} in {last[1]:.0f} s")
    ratio = gains["randomised"] / gains["plain"] if gains["plain"] else float("nan")
    payload["randomised_gain_over_plain_gain"] = ratio
    payload["command"] = (
        f"python bench/randomized_learning.py --epochs {args.epochs} --envs {args.envs}"
    )
    print(f"reward gained, randomised / plain: {ratio:.2f}")
    write_result("randomized_learning", payload)
    plot_reward_curves(panels, RESULTS / "randomized_learning.png", "mujoco backend, CPU")


if __name__ == "__main__":
    main()
