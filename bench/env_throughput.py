"""Env steps/s of every task through our VecTask on the `mujoco` backend vs bare MuJoCo stepping.

Baseline: ``mujoco.rollout`` on the same compiled model with the same worker threads, physics
steps per env step and world count, state fed back each call: physics and nothing else. Ours:
``VecTask.step`` with torch actions in and torch observations, rewards, resets out (task logic in
JAX, episode bookkeeping, zero-copy hand-over to torch). Both do exactly the same physics: before
each of our steps the baseline steps a copy of our worlds' state with the same controls (contact
counts drive MuJoCo's cost, so the state mix matters). The two alternate which goes first, step
by step, so machine noise hits both; the ratio of the summed times is reported per task (target
>= 0.90), with the same ratio per round of steps to show the machine's noise within the run.
With a GPU, also MJX env steps/s per task at 4096, 8192 and 16384 envs.

Each task runs at its own config's numEnvs (what ``python train.py task=<task>`` steps: 4096,
ShadowHand 16384) unless ``--envs`` sets one world count for all; the step's roughly fixed cost
weighs more at fewer worlds, so ``--envs 1024`` shows the small-batch side.

    python bench/env_throughput.py [--tasks Ant Humanoid ...] [--envs 1024] [--rounds 7]

Results: bench/results/env_throughput.json at the tasks' own numEnvs, env_throughput_<envs>.json
with ``--envs``.
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np
import torch
from common import compose, write_result
from mujoco import rollout
from omegaconf import OmegaConf

from isaacgymenvs_gmi.sim.model import compile_task_model
from isaacgymenvs_gmi.sim.vec_task import PhysicsOptions, VecTask, available_cores
from isaacgymenvs_gmi.tasks import get_task_class

TASKS = ("Ant", "Humanoid", "Anymal", "BallBalance", "FrankaCabinet", "ShadowHand")


def task_config(task: str, num_envs: int | None = None) -> dict:
    """The task's config as ``train.py`` composes it, at ``num_envs`` worlds (None: its own)."""
    overrides = [f"task={task}"] + ([f"num_envs={num_envs}"] if num_envs else [])
    return OmegaConf.to_container(compose(*overrides).task, resolve=True)


class BareStepping:
    """MuJoCo's batched stepping of N worlds, nothing else."""

    def __init__(self, task_cfg: dict, num_envs: int, threads: int):
        self.model, timing = compile_task_model(get_task_class(task_cfg["name"]), task_cfg)
        m = self.model
        self.nstep = timing.nstep
        self.pool = rollout.Rollout(nthread=threads if threads > 1 else None)
        self.datas = [mujoco.MjData(m) for _ in range(threads)]
        nstate = mujoco.mj_stateSize(m, mujoco.mjtState.mjSTATE_FULLPHYSICS)
        self.state = np.empty((num_envs, nstate))
        self.out = np.empty((num_envs, self.nstep, nstate))
        self.sensors = np.empty((num_envs, self.nstep, m.nsensordata))
        self.ctrl = np.empty((num_envs, self.nstep, m.nu))
        self.models = [m] * num_envs

    def step(self) -> None:
        self.pool.rollout(
            self.models,
            self.datas,
            self.state,
            self.ctrl,
            nstep=self.nstep,
            state=self.out,
            sensordata=self.sensors,
            skip_checks=True,
            control_spec=mujoco.mjtState.mjSTATE_CTRL,
        )
        self.state[:] = self.out[:, -1]


def cpu_ratio(task: str, num_envs: int | None, rounds: int, steps: int) -> dict:
    threads = available_cores()
    cfg = task_config(task, num_envs)
    num_envs = int(cfg["env"]["numEnvs"])
    env = VecTask(cfg, "cpu", "cpu", physics=PhysicsOptions(backend="mujoco", num_threads=threads))
    worlds, logic = env.backend.worlds, env.backend.logic
    bare = BareStepping(cfg, num_envs, threads)
    # steady state: compile the reset-pool refill now, not inside the timed steps
    env.backend.refill_pool()
    gen = torch.Generator().manual_seed(0)
    ours_round, bare_round = np.zeros(rounds), np.zeros(rounds)
    for i in range(rounds * steps + 10):  # the first 10 steps warm up JIT, pools, caches
        actions = torch.rand((num_envs, env.num_actions), generator=gen) * 2 - 1
        bare.state[:] = worlds.state
        ctrl = actions.numpy()[:, logic.ctrl_index] * logic.ctrl_scale + logic.ctrl_offset
        bare.ctrl[:] = ctrl[:, None, :]
        t0 = time.perf_counter()
        if i % 2:
            env.step(actions)
            t1 = time.perf_counter()
            bare.step()
            t2 = time.perf_counter()
            ours, base = t1 - t0, t2 - t1
        else:
            bare.step()
            t1 = time.perf_counter()
            env.step(actions)
            t2 = time.perf_counter()
            ours, base = t2 - t1, t1 - t0
        if i >= 10:
            r = (i - 10) // steps
            ours_round[r] += ours
            bare_round[r] += base
    env.close()
    n = rounds * steps
    ours_s, bare_s = ours_round.sum(), bare_round.sum()
    round_ratios = bare_round / ours_round
    return {
        "num_envs": num_envs,
        "threads": threads,
        "physics_steps_per_env_step": bare.nstep,
        "ours_env_steps_per_s": num_envs * n / ours_s,
        "bare_env_steps_per_s": num_envs * n / bare_s,
        "ratio": bare_s / ours_s,
        "target": 0.90,
        "steps": n,
        # the same ratio per round of `steps` steps: the machine's noise within this run
        "round_ratios": [round(float(x), 4) for x in round_ratios],
        "round_ratio_median": float(np.median(round_ratios)),
    }


def timed(fn, steps: int) -> float:
    start = time.perf_counter()
    for _ in range(steps):
        fn()
    return time.perf_counter() - start


def gpu_mjx(task: str, sizes=(4096, 8192, 16384), steps: int = 50) -> list[dict]:
    out = []
    for n in sizes:
        cfg = task_config(task, n)
        env = VecTask(cfg, "cuda:0", "cuda:0", physics=PhysicsOptions(backend="mjx"))
        actions = torch.zeros((n, env.num_actions), device="cuda:0")
        timed(lambda env=env, a=actions: env.step(a), 3)
        torch.cuda.synchronize()
        elapsed = timed(lambda env=env, a=actions: env.step(a), steps)
        torch.cuda.synchronize()
        out.append({"num_envs": n, "env_steps_per_s": n * steps / elapsed})
        env.close()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    p.add_argument("--envs", type=int, default=None, help="worlds per task (default: its own)")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--steps", type=int, default=40)
    args = p.parse_args()
    cpu, gpu = {}, {}
    for task in args.tasks:
        r = cpu[task] = cpu_ratio(task, args.envs, args.rounds, args.steps)
        print(
            f"{task}, {r['num_envs']} envs, {r['threads']} threads: ours "
            f"{r['ours_env_steps_per_s']:,.0f} env steps/s, bare MuJoCo "
            f"{r['bare_env_steps_per_s']:,.0f}; ratio {r['ratio']:.3f} (target >= 0.90; "
            f"per round {min(r['round_ratios']):.3f}-{max(r['round_ratios']):.3f})"
        )
        if torch.cuda.is_available():
            gpu[task] = gpu_mjx(task)
            for row in gpu[task]:
                rate = row["env_steps_per_s"]
                print(f"MJX {task} {row['num_envs']} envs: {rate:,.0f} env steps/s")
    result = {
        "cpu_mujoco": cpu,
        "gpu_mjx": gpu if gpu else "not measured: no GPU on this machine",
    }
    # the tasks' own sizes keep the plain name; one size for all sits beside it
    write_result(f"env_throughput_{args.envs}" if args.envs else "env_throughput", result)


if __name__ == "__main__":
    main()
