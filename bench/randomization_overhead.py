"""Env steps/s with domain randomisation on ÷ off (target >= 0.9), for Ant and ShadowHand.

Each task's own config with ``task.task.randomize`` true (upstream's ``randomization_params``:
observation and action noise, gravity for ShadowHand, and per-world masses, friction and dof
properties, each world stepping with a model of its own) against the same config with it off.
The two envs run in alternating rounds of ``--steps`` env steps with random actions, in one
process on the CPU (MuJoCo C backend, or MJX with ``--backend mjx``); the ratio is the median
of the per-round ratios. The default rounds run past the configs' ``frequency`` (600 and 720
env steps), so worlds are redrawn as their episodes end in the later rounds, as in training.

    python bench/randomization_overhead.py [--tasks Ant ShadowHand] [--envs 1024] [--rounds 8]
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


def _env(task: str, envs: int, randomize: bool, backend: str) -> VecTask:
    cfg = compose(f"task={task}", f"num_envs={envs}", f"task.task.randomize={randomize}")
    task_config = OmegaConf.to_container(cfg.task, resolve=True)
    return VecTask(task_config, "cpu", "cpu", physics=PhysicsOptions(backend), seed=0)


def _rate(env: VecTask, steps: int, rng: np.random.Generator) -> float:
    actions = [
        torch.from_numpy(rng.uniform(-1, 1, (env.num_envs, env.num_actions)).astype(np.float32))
        for _ in range(steps)
    ]
    start = time.perf_counter()
    for a in actions:
        env.step(a)
    float(env.obs_buf.sum())  # MJX: wait for the last step
    return steps * env.num_envs / (time.perf_counter() - start)


def _count_redraws(env: VecTask) -> dict[str, int]:
    """Counts the worlds and gravity draws after the first, as the env steps (live dict)."""
    counts = {"worlds": 0, "gravity": 0}
    params = env.world_params
    after_step = params.after_step

    def counted(*args, **kwargs):
        update = after_step(*args, **kwargs)
        if update is not None:
            counts["worlds"] += int(update.rows.size)
            counts["gravity"] += int(update.gravity is not None)
        return update

    params.after_step = counted
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["Ant", "ShadowHand"])
    parser.add_argument("--envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--backend", choices=["mujoco", "mjx"], default="mujoco")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    results = {}
    for task in args.tasks:
        off = _env(task, args.envs, False, args.backend)
        on = _env(task, args.envs, True, args.backend)
        assert off.noise is None and on.noise is not None and on.world_params is not None
        redrawn = _count_redraws(on)
        _rate(off, 5, rng), _rate(on, 5, rng)  # warm-up
        ratios, rates = [], {"off": [], "on": []}
        for k in range(args.rounds):
            order = [("off", off), ("on", on)] if k % 2 == 0 else [("on", on), ("off", off)]
            measured = {name: _rate(env, args.steps, rng) for name, env in order}
            for name in rates:
                rates[name].append(measured[name])
            ratios.append(measured["on"] / measured["off"])
        ratio = statistics.median(ratios)
        results[task] = {
            "env_steps_per_s": rates,
            "round_ratios": ratios,
            "on_over_off": ratio,
            "applied": on.world_params.settings.describe(),
            "worlds_redrawn": redrawn["worlds"],
            "gravity_draws": redrawn["gravity"],
        }
        print(
            f"{task}, {args.envs} envs: randomisation on / off = {ratio:.3f} (target >= 0.9; "
            f"rounds {min(ratios):.3f}-{max(ratios):.3f}; {redrawn['worlds']} worlds redrawn, "
            f"{redrawn['gravity']} gravity draws)"
        )
        off.close()
        on.close()
    write_result(
        "randomization_overhead" + ("_mjx" if args.backend == "mjx" else ""),
        {
            "command": "python bench/randomization_overhead.py "
            + " ".join(
                f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}"
                for k, v in vars(args).items()
            ),
            "target": 0.9,
            "tasks": results,
        },
    )


if __name__ == "__main__":
    main()
