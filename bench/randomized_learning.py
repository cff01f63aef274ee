"""ShadowHand with upstream's randomisation (``ShadowHandOpenAI_FF``'s block: noise, gravity,
per-world masses, friction and dof properties) against the same run without it: mean episode
reward after the same number of PPO epochs, each run from the same seed on this machine's CPU
(mujoco backend, 1 GMI). The reward meter is noisy (few episodes end per epoch), so each run
is summed up by the mean of its first and of its last tenth of reports; printed: what each run
gains between them, and the randomised run's gain as a fraction of the plain run's. Plot:
bench/results/randomized_learning.png.

    python bench/randomized_learning.py [--epochs 400] [--envs 512]
"""

from __future__ import annotations

import argparse
import statistics
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
    p.add_argument("--epochs", type=int, default=400)
    p.add_argument("--envs", type=int, default=512)
    args = p.parse_args()
    payload, panels, gains = {}, {}, {}
    for name, randomize in (("plain", False), ("randomised", True)):
        overrides, res = train(randomize, args.epochs, args.envs)
        rewards = [r for _, _, r in res.history]
        tenth = max(1, len(rewards) // 10)
        early, late = statistics.mean(rewards[:tenth]), statistics.mean(rewards[-tenth:])
        gains[name] = late - early
        payload[name] = {
            "overrides": overrides,
            "early_reward": early,
            "late_reward": late,
            "reports_averaged": tenth,
            "gain": gains[name],
            "wall_s": res.history[-1][1],
            "curve": res.history,
        }
        panels[f"ShadowHand {name}"] = res.history
        print(f"{name}: reward {early:.1f} -> {late:.1f} in {res.history[-1][1]:.0f} s")
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
