"""Env steps/s with domain randomisation on ÷ off (target >= 0.9), for Ant and ShadowHand.

Each task's own config with ``task.task.randomize`` true (upstream's ``randomization_params``:
what is applied today is the observation and action noise) against the same config with it off.
The two envs run in alternating rounds of ``--steps`` env steps with random actions, in one
process on the CPU (MuJoCo C backend); the ratio is the median of the per-round ratios.

    python bench/randomization_overhead.py [--tasks Ant ShadowHand] [--envs 1024] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from common import compose, write_result
from omegaconf import OmegaConf

from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask


def _env(task: str, envs: int, randomize: bool) -> VecTask:
    cfg = compose(f"task={task}", f"num_envs={envs}", f"task.task.randomize={randomize}")
    task_config = OmegaConf.to_container(cfg.task, resolve=True)
    return VecTask(task_config, "cpu", "cpu", physics=PhysicsOptions("mujoco"), seed=0)


def _rate(env: VecTask, steps: int, rng: np.random.Generator) -> float:
    actions = [
        torch.from_numpy(rng.uniform(-1, 1, (env.num_envs, env.num_actions)).astype(np.float32))
        for _ in range(steps)
    ]
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    return steps * env.num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["Ant", "ShadowHand"])
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = {}
    for task in args.tasks:
        off, on = _env(task, args.envs, False), _env(task, args.envs, True)
        assert off.noise is None and on.noise is not None
        _rate(off, 5, rng), _rate(on, 5, rng)  # warm-up
        ratios, rates = [], {"off": [], "on": []}
        for k in range(args.rounds):
            order = [("off", off), ("on", on)] if k % 2 == 0 else [("on", on), ("off", off)]
            measured = {name: _rate(env, args.steps, rng) for name, env in order}
            for name in rates:
                rates[name].append(measured[name])
            ratios.append(measured["on"] / measured["off"])
        ratio = statistics.median(ratios)
        results[task] = {"env_steps_per_s": rates, "round_ratios": ratios, "on_over_off": ratio}
        print(
            f"{task}, {args.envs} envs: randomisation on / off = {ratio:.3f} (target >= 0.9; "
            f"rounds {min(ratios):.3f}-{max(ratios):.3f})"
        )
        off.close()
        on.close()
    write_result(
        "randomization_overhead",
        {
            "command": "python bench/randomization_overhead.py "
            + " ".join(
                f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                for k, v in vars(args).items()
            ),
            "applied": "observation and action noise (sim_params / actor_params not yet)",
            "target": 0.9,
            "tasks": results,
        },
    )


if __name__ == "__main__":
    main()
