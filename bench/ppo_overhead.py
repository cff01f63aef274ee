"""Ant PPO env steps/s through the plugin vs a plain rl-games Runner without it.

Plain: rl-games' own ``Runner`` with the upstream AntPPO config, its default observer and a
minimal vec-env wrapper around the same MuJoCo-backed Ant (Isaac Gym itself cannot run here).
Plugin: ``python train.py task=Ant`` as a user runs it (config validation, observer, patches).
Each run is its own process; the two alternate, and throughput is counted by rl-games' own
clock from epoch 3 on (start-up excluded). Noise on a shared machine only ever slows a run down,
so the ratio of the best runs is the headline (target >= 0.97); medians are reported too.

    python bench/ppo_overhead.py [--pairs 3] [--epochs 12] [--envs 1024]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

from common import ROOT, compose, median, write_result

OVERRIDES = ["task=Ant", "train.params.config.save_frequency=0"]


def _overrides(envs: int, epochs: int, train_dir: str) -> list[str]:
    minibatch = 16 * envs // 2
    return [
        *OVERRIDES,
        f"num_envs={envs}",
        f"max_iterations={epochs}",
        f"train.params.config.minibatch_size={minibatch}",
        f"train_dir={train_dir}",
    ]


def _throughput(points: list[tuple[int, float]]) -> float:
    (f0, t0), (f1, t1) = points[2], points[-1]
    return (f1 - f0) / (t1 - t0)


def run_plugin(envs: int, epochs: int, train_dir: str) -> float:
    from isaacgymenvs_gmi.launch import plan_run, run

    cfg = compose(*_overrides(envs, epochs, train_dir))
    result = run(cfg, plan_run(cfg))
    return _throughput([(f, t) for f, t, _ in result.history])


def run_plain(envs: int, epochs: int, train_dir: str) -> float:
    from omegaconf import OmegaConf
    from rl_games.common import env_configurations, vecenv
    from rl_games.common.algo_observer import DefaultAlgoObserver
    from rl_games.common.ivecenv import IVecEnv
    from rl_games.torch_runner import Runner

    from isaacgymenvs_gmi.sim.vec_task import VecTask

    cfg = compose(*_overrides(envs, epochs, train_dir))
    task = OmegaConf.to_container(cfg.task, resolve=True)

    class Plain(IVecEnv):
        def __init__(self, *_, **__):
            self.env = VecTask(task, "cpu", "cpu", seed=cfg.seed)

        def step(self, actions):
            return self.env.step(actions)

        def reset(self):
            return self.env.reset()

        def get_number_of_agents(self):
            return 1

        def get_env_info(self):
            return {
                "action_space": self.env.action_space,
                "observation_space": self.env.observation_space,
            }

    class Clock(DefaultAlgoObserver):
        points: list[tuple[int, float]] = []

        def after_print_stats(self, frame, epoch_num, total_time):
            super().after_print_stats(frame, epoch_num, total_time)
            self.points.append((frame, total_time))

    env_configurations.register("rlgpu", {"vecenv_type": "PLAIN", "env_creator": lambda **kw: None})
    vecenv.register("PLAIN", lambda name, n, **kw: Plain())
    params = OmegaConf.to_container(cfg.train, resolve=True)["params"]
    params["config"].update(
        device="cpu", device_name="cpu", train_dir=train_dir, multi_gpu=False, mixed_precision=False
    )
    runner = Runner(Clock())
    runner.load({"params": params})
    runner.run({"train": True, "play": False, "checkpoint": None, "sigma": None})
    return _throughput(Clock.points)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pairs", type=int, default=3)
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--envs", type=int, default=1024)
    p.add_argument("--one", choices=("plugin", "plain"))
    p.add_argument("--train-dir", default=None, help="default: a fresh temporary folder")
    args = p.parse_args()
    args.train_dir = args.train_dir or tempfile.mkdtemp(prefix="ppo-overhead-")
    if args.one:  # child process: one run, JSON on the last line
        fn = run_plugin if args.one == "plugin" else run_plain
        print(json.dumps({"steps_per_s": fn(args.envs, args.epochs, args.train_dir)}))
        return
    samples: dict[str, list[float]] = {"plugin": [], "plain": []}
    for _ in range(args.pairs):
        for kind in ("plain", "plugin"):
            out = (
                subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--one",
                        kind,
                        "--epochs",
                        str(args.epochs),
                        "--envs",
                        str(args.envs),
                        "--train-dir",
                        args.train_dir,
                    ],
                    cwd=ROOT,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                .stdout.strip()
                .splitlines()[-1]
            )
            samples[kind].append(json.loads(out)["steps_per_s"])
            print(f"{kind:6s} {samples[kind][-1]:,.0f} env steps/s")
    ratio = max(samples["plugin"]) / max(samples["plain"])
    ratio_median = median(samples["plugin"]) / median(samples["plain"])
    print(
        f"Ant PPO, {args.envs} envs: plugin / plain rl-games = {ratio:.3f} (best runs; "
        f"medians {ratio_median:.3f}; target >= 0.97)"
    )
    write_result(
        "ppo_overhead",
        {
            "num_envs": args.envs,
            "epochs": args.epochs,
            "samples_env_steps_per_s": samples,
            "ratio": ratio,
            "ratio_of_medians": ratio_median,
            "target": 0.97,
        },
    )


if __name__ == "__main__":
    main()
