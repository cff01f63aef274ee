"""The GPU headline: Ant training with the task's own settings, one process vs k GMIs per GPU.

Each run is a real ``train.py`` (MJX physics on the card, rl-games PPO) with the same total
number of envs split evenly among its GMIs (``minibatch_size`` follows the split so that every
epoch keeps the config's number of minibatches). A run ends at ``max_iterations`` or, when its
wall-time limit is reached, by the graceful SIGINT stop (final checkpoint, exit 130). Measured per
run, all from the run's own output and NVML:

- start-up, cold and warm: seconds from the process start to the end of epoch 1 (imports,
  checks, GMI spawn, model build, XLA compilation, rl-games set-up), first with a fresh compile
  cache (``--cache``, default: a new folder in ``--out``), then again for a 2-epoch rerun of the
  same size, its programs now loaded from the cache; each with the run's own start-up line;
- env steps/s with training: epochs x total envs x horizon over the wall time between the first
  and the last epoch line (steady state; start-up excluded);
- mean episode reward against wall time (rl-games' ``rewards/iter`` from TensorBoard, placed at
  the wall time its epoch line was printed) and the time to ``--target-reward``;
- GPU utilisation (mean of 0.5 s NVML samples while training) and peak device memory;
- where an epoch's time goes (GMI 0's rl-games timings, medians): env steps, the rollout's
  inference, the update.

The ratio printed is each run's env steps/s over the first run's, measured in the same call.
Runs are ``--gmis K ...`` (MPS GMIs where K > 1) or named variants, ``--runs NAME:K[:WORDS]``,
whose words are ``VAR=value`` environment settings (upper-case names) or train.py overrides:

    python bench/gpu_headline.py [--gmis 1 3] [--limit-s 200] [--out DIR]
    python bench/gpu_headline.py --limit-s 90 --runs one:1 mps2:2 mps3:3 mps4:4 \
        "mps3_uncapped:3:gmi.sm_percent=[100,100,100]" "direct3:3:gmi.backend=direct" \
        "mps3_cmdbuf:3:XLA_FLAGS=--xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUSTOM_CALL"
    python bench/gpu_headline.py --dry-run      # tiny, on the CPU: keeps the script from rotting
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (  # noqa: E402
    ROOT,
    STARTUP_LINE,
    epoch_times,
    first_match,
    machine,
    read_scalars,
    run_logged,
    write_result,
)

NAN_REWARD = re.compile(r"reward:?\s+nan\b", re.IGNORECASE)
SKIPPED = re.compile(r"\| (\d+) of (\d+) steps skipped")  # the progress line's skip count
PASSED, FAILED = r"largest relative error ([\d.e+-]+)", r"(.*?) is off by ([\d.e+-]+)"
AUDIT = re.compile(rf"numerical audit at epoch (\d+): (?:{PASSED}|{FAILED})")  # gmi.debug.audit
ENV_WORD = re.compile(r"^[A-Z_][A-Z0-9_]*=")


@dataclass(frozen=True)
class RunSpec:
    """One headline run: ``gmis`` GMIs sharing the total envs, with extra environment and
    overrides (MPS GMIs where ``gmis`` > 1 unless the overrides name another backend)."""

    name: str
    gmis: int
    env: dict[str, str] = field(default_factory=dict)
    overrides: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> RunSpec:
        """``NAME:K[:WORDS]``; each word is ``VAR=value`` (an upper-case name) or an override."""
        name, _, rest = text.partition(":")
        count, _, words = rest.partition(":")
        if not name or not count.isdigit() or int(count) < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: expected NAME:GMIS[:WORDS]")
        env = dict(w.split("=", 1) for w in words.split() if ENV_WORD.match(w))
        overrides = tuple(w for w in words.split() if not ENV_WORD.match(w))
        return cls(name, int(count), env, overrides)


class GpuSampler:
    """Samples one GPU's utilisation (%) and used memory (MiB) every ``period_s``, through the
    package's own NVML reading (``gmi.status.gpu_stats``); no samples without NVML."""

    def __init__(self, index: int = 0, period_s: float = 0.5):
        self.samples: list[tuple[float, float, float]] = []  # (time, util %, memory MiB)
        self._index, self._period_s = index, period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        from isaacgymenvs_gmi.gmi.status import gpu_stats

        while not self._stop.wait(self._period_s):
            stats = {i: (util, gib) for i, util, gib in gpu_stats()}
            if self._index not in stats:
                return  # no driver / no GPU: the run is measured without GPU columns
            util, gib = stats[self._index]
            self.samples.append((time.monotonic(), util, gib * 1024))

    def between(self, t0: float, t1: float) -> dict[str, float | None]:
        rows = [s for s in self.samples if t0 <= s[0] <= t1]
        if not rows:
            return {"gpu_util_mean_pct": None, "gpu_memory_peak_mib": None}
        return {
            "gpu_util_mean_pct": round(sum(r[1] for r in rows) / len(rows), 1),
            "gpu_memory_peak_mib": round(max(r[2] for r in rows)),
        }


def split_envs(total: int, gmis: int, horizon: int, minibatches: int) -> tuple[int, int]:
    """Envs per GMI (``ceil(total / gmis)``) and the minibatch that keeps ``minibatches``."""
    per_gmi = math.ceil(total / gmis)
    batch = per_gmi * horizon
    while batch % minibatches:
        per_gmi += 1
        batch = per_gmi * horizon
    return per_gmi, batch // minibatches


def reward_history(train_dir: Path) -> list[tuple[int, float]]:
    """(epoch, mean episode reward) from the run's TensorBoard summaries (GMI 0 writes them)."""
    found: list[tuple[int, float]] = []
    for summaries in sorted(train_dir.glob("*/summaries")):
        found = read_scalars(summaries, "rewards/iter") or found
    return found


SPLIT_TAGS = {  # rl-games' per-epoch times (GMI 0's): env steps, rollout with inference, update
    "env_s": "performance/step_time",
    "rollout_s": "performance/step_inference_time",
    "update_s": "performance/rl_update_time",
}


def epoch_split(train_dir: Path, skip: int = 2) -> dict[str, float]:
    """Where an epoch's time goes: the median over epochs after the first ``skip`` of each of
    rl-games' own timings (seconds), and the inference share of the rollout; {} if unwritten."""
    split: dict[str, float] = {}
    for summaries in sorted(train_dir.glob("*/summaries")):
        for key, tag in SPLIT_TAGS.items():
            values = [v for _, v in read_scalars(summaries, tag)][skip:]
            if values:
                split[key] = round(statistics.median(values), 4)
    if {"env_s", "rollout_s"} <= split.keys():
        split["inference_s"] = round(split["rollout_s"] - split["env_s"], 4)
    return split


def our_epoch_split(train_dir: Path, skip: int = 2) -> dict[str, list[float]]:
    """The plugin's own epoch split (``gmi/stage_<stage>_s_gmi<i>``): per stage, the median
    seconds of each GMI over epochs after the first ``skip``; {} if unwritten."""
    from isaacgymenvs_gmi.rl.epoch_work import STAGES

    split: dict[str, list[float]] = {}
    for summaries in sorted(train_dir.glob("*/summaries")):
        for stage in STAGES:
            per_gmi, i = [], 0
            while values := [v for _, v in read_scalars(summaries, f"gmi/stage_{stage}_s_gmi{i}")]:
                per_gmi.append(round(statistics.median(values[skip:] or values), 4))
                i += 1
            if per_gmi:
                split[stage] = per_gmi
    return split


def health(rows: list[tuple[float, str]]) -> dict:
    """What the run said of its updates: optimizer steps the gradient scaler skipped (summed
    over the epochs' lines) and the numerical audits (``gmi.debug.audit``), passed or failed."""
    skipped = asked = 0
    audits = []
    for _, line in rows:
        if "env steps/s" in line and (m := SKIPPED.search(line)):
            skipped, asked = skipped + int(m.group(1)), asked + int(m.group(2))
        if (a := AUDIT.search(line)) and not any(x["epoch"] == int(a.group(1)) for x in audits):
            failed = a.group(3) is not None
            audits.append(
                {
                    "epoch": int(a.group(1)),
                    "error": float(a.group(4) if failed else a.group(2)),
                    "passed": not failed,
                    "line": line.strip()[:300],
                }
            )
    return {"skipped_steps": skipped, "steps_in_skipping_epochs": asked, "audits": audits}


def train_command(args, spec: RunSpec, iterations: int, train_dir: Path, *extra: str) -> list[str]:
    """``python train.py`` for ``spec.gmis`` GMIs sharing ``--total-envs`` (MPS on a GPU unless
    ``spec`` names a backend), with the run's compile cache and overrides."""
    gmis = spec.gmis
    per_gmi, minibatch = split_envs(args.total_envs, gmis, args.horizon, args.minibatches)
    cmd = [
        sys.executable,
        "train.py",
        f"task={args.task}",
        f"gmi.per_gpu={gmis}",
        f"num_envs={per_gmi}",
        f"train.params.config.minibatch_size={minibatch}",
        f"max_iterations={iterations}",
        f"train_dir={train_dir}",
        *extra,
        f"gmi.compile_cache={args.cache}",
        *args.overrides,
        *spec.overrides,
    ]
    backend_named = any(w.startswith("gmi.backend=") for w in cmd)
    if gmis > 1 and not args.dry_run and not backend_named:
        cmd.append("gmi.backend=mps")
    return cmd


def measure(args, spec: RunSpec, out: Path, sampler: GpuSampler) -> dict:
    gmis = spec.gmis
    per_gmi, minibatch = split_envs(args.total_envs, gmis, args.horizon, args.minibatches)
    train_dir = out / "runs" / spec.name
    cmd = train_command(args, spec, args.max_iterations, train_dir, f"experiment={spec.name}")
    shown = " ".join([*(f"{k}={v}" for k, v in spec.env.items()), *cmd[1:]])
    print(f"== {spec.name}, {gmis} GMI(s): {shown.replace(str(out), 'OUT')}", flush=True)
    log = out / f"headline_{spec.name}.log"
    rows, code, t0 = run_logged(cmd, log, args.limit_s, spec.env)
    epochs = epoch_times(rows)
    result: dict = {
        "name": spec.name,
        "gmis": gmis,
        "environment": spec.env,
        "envs_per_gmi": per_gmi,
        "total_envs": per_gmi * gmis,
        "minibatch_size": minibatch,
        "command": "python " + " ".join(cmd[1:]).replace(str(out), "OUT"),  # no machine path
        "exit_code": code,
        "epochs_done": max(epochs, default=0),
        "startup_s": round(epochs[1], 2) if 1 in epochs else None,  # cold: a fresh cache
        "startup_line": first_match(rows, STARTUP_LINE),
        "wall_s": round(rows[-1][0], 2) if rows else None,
    }
    if len(epochs) >= 3:
        first, last = min(epochs), max(epochs)
        steps = (last - first) * per_gmi * gmis * args.horizon
        result["env_steps_per_s"] = round(steps / (epochs[last] - epochs[first]))
        result.update(sampler.between(t0 + epochs[first], t0 + epochs[last]))
    else:
        result["env_steps_per_s"] = None
        tail = "\n".join(line for _, line in rows[-15:])
        print(f"   fewer than 3 epochs finished; last lines:\n{tail}", flush=True)
    # a policy gone to NaN keeps stepping (NaN states end no episode) and reports "reward nan"
    result["non_finite_reward"] = any(NAN_REWARD.search(line) for _, line in rows)
    history = [(e, r, epochs[e]) for e, r in reward_history(train_dir) if e in epochs]
    result["reward_history"] = [  # JSON has no NaN: a non-finite reward is written as null
        {
            "epoch": e,
            "wall_s": round(t, 2),
            "mean_reward": round(r, 2) if math.isfinite(r) else None,
        }
        for e, r, t in history
    ]
    finite = [(r, t) for _, r, t in history if math.isfinite(r)]
    hit = [t for r, t in finite if r >= args.target_reward]
    result["time_to_target_s"] = round(hit[0], 2) if hit else None
    result["best_reward"] = round(max(r for r, _ in finite), 2) if finite else None
    result["epoch_split_s"] = epoch_split(train_dir)
    result["stage_split_s"] = our_epoch_split(train_dir)
    result.update(health(rows))
    print(
        f"   {json.dumps({k: v for k, v in result.items() if k != 'reward_history'})}", flush=True
    )
    return result


def warm_startup(args, spec: RunSpec, out: Path) -> dict:
    """Start-up of the same run again, its programs now in the compile cache: seconds to the
    first epoch line and the run's own start-up line (stopped after 2 epochs)."""
    cmd = train_command(args, spec, 2, out / "runs" / f"warm_{spec.name}")
    log = out / f"headline_warm_{spec.name}.log"
    rows, code, _ = run_logged(cmd, log, args.limit_s, spec.env)
    epochs = epoch_times(rows)
    line = first_match(rows, STARTUP_LINE)
    print(f"   warm start-up, {spec.name}: {epochs.get(1)} s; {line}", flush=True)
    return {
        "startup_warm_s": round(epochs[1], 2) if 1 in epochs else None,
        "startup_warm_line": line,
        "warm_exit_code": code,
    }


def plot(runs: list[dict], path: Path, card: str, task: str, target: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    for run in runs:
        rows = run["reward_history"]
        label = f"{run['name']}: {run['gmis']} GMI(s) x {run['envs_per_gmi']} envs"
        if run["non_finite_reward"]:
            label += " (reward NaN: not plotted)"
        rows = [r for r in rows if r["mean_reward"] is not None]
        ax.plot([r["wall_s"] for r in rows], [r["mean_reward"] for r in rows], label=label)
    ax.axhline(target, color="grey", linestyle=":", linewidth=1)
    ax.set(xlabel="wall time since process start [s]", ylabel="mean episode reward")
    ax.set_title(f"{task}, same total envs ({card})", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="Ant")
    parser.add_argument("--gmis", type=int, nargs="+", default=[1, 3])
    parser.add_argument(
        "--runs", type=RunSpec.parse, nargs="+", default=None, help="NAME:K[:WORDS], see above"
    )
    parser.add_argument("--no-warm", action="store_true", help="skip the warm start-up reruns")
    parser.add_argument("--total-envs", type=int, default=4096, help="the task's numEnvs")
    parser.add_argument("--horizon", type=int, default=16, help="the train config's horizon")
    parser.add_argument("--minibatches", type=int, default=2, help="minibatches per epoch")
    parser.add_argument("--max-iterations", type=int, default=1000)
    parser.add_argument("--limit-s", type=float, default=200.0, help="wall time per run")
    parser.add_argument("--target-reward", type=float, default=3000.0)
    parser.add_argument("--out", type=Path, default=None, help="logs, runs and a copy of the JSON")
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU")
    parser.add_argument(
        "--cache", type=Path, default=None, help="compile cache (default: a fresh one in --out)"
    )
    parser.add_argument("overrides", nargs="*", help="more train.py overrides")
    args = parser.parse_args()
    name = "gpu_headline"
    if args.dry_run:
        args.total_envs, args.max_iterations, args.limit_s = 64, 3, 120.0
        args.overrides = ["sim_device=cpu", "rl_device=cpu", *args.overrides]
        name = "gpu_headline_dry_run"
    out = args.out or ROOT / "bench" / "results" / name
    out.mkdir(parents=True, exist_ok=True)
    if args.cache is None:  # cold for the first run of each size, warm for its rerun
        args.cache = out / "compile-cache"
        shutil.rmtree(args.cache, ignore_errors=True)

    sampler = GpuSampler()
    sampler.start()
    try:
        specs = args.runs or [RunSpec(f"gmi{k}", k) for k in args.gmis]
        runs = [measure(args, spec, out, sampler) for spec in specs]
        for spec, run in zip(specs, runs, strict=True):
            if not args.no_warm:
                run.update(warm_startup(args, spec, out))
    finally:
        sampler.stop()
    facts = machine()
    card = (facts.get("gpu") or "no GPU").split(",")[0]
    base = runs[0].get("env_steps_per_s")
    for run in runs[1:]:
        rate = run.get("env_steps_per_s")
        ratio = round(rate / base, 3) if rate and base else None
        run["env_steps_per_s_vs_first"] = ratio
        print(f"{run['name']} / {runs[0]['name']} env steps/s: {ratio}", flush=True)
    payload = {"card": card, "task": args.task, "target_reward": args.target_reward, "runs": runs}
    plot(runs, out / f"{name}.png", card, args.task, args.target_reward)
    text = json.dumps({"machine": facts, **payload}, indent=2, allow_nan=False)
    (out / f"{name}.json").write_text(text + "\n")
    if not args.dry_run:
        write_result(name, payload)


if __name__ == "__main__":
    main()
