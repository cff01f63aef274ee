"""Render bench/results/*.json into the results table of README.md (between the markers).

python bench/report.py
"""

from __future__ import annotations

import json
import re
import statistics

from common import RESULTS, ROOT

START, END = "<!-- results:start -->", "<!-- results:end -->"


def _load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def rows() -> list[str]:
    out = [
        "| benchmark | measured | baseline (same run) | ratio | target | machine |",
        "|---|---|---|---|---|---|",
    ]
    env = _load("env_throughput")
    # the same measurement at other world counts (env_throughput_<envs>.json), after it
    sized = sorted(RESULTS.glob("env_throughput_*.json"), key=lambda p: int(p.stem.split("_")[-1]))
    for run in [env, *(json.loads(p.read_text()) for p in sized)]:
        if not run:
            continue
        m = run["machine"]
        for task, r in run["cpu_mujoco"].items():
            out.append(
                f"| {task} env steps/s, `mujoco` backend, {r['num_envs']} envs, "
                f"{r['threads']} threads | {r['ours_env_steps_per_s']:,.0f} "
                f"| bare MuJoCo stepping {r['bare_env_steps_per_s']:,.0f} "
                f"| **{r['ratio']:.3f}** | >= 0.90 | {m['cores']}-core CPU |"
            )
        if isinstance(run.get("gpu_mjx"), dict):
            for task, rows in run["gpu_mjx"].items():
                for g in rows:
                    out.append(
                        f"| {task} env steps/s, `mjx`, {g['num_envs']} envs | "
                        f"{g['env_steps_per_s']:,.0f} | | | | {m.get('gpu')} |"
                    )
    ppo = _load("ppo_overhead")
    if ppo:
        s = ppo["samples_env_steps_per_s"]
        out.append(
            f"| Ant PPO env steps/s, {ppo['num_envs']} envs "
            f"| plugin {max(s['plugin']):,.0f} (best) "
            f"| plain rl-games Runner {max(s['plain']):,.0f} (best) | **{ppo['ratio']:.3f}** "
            f"(medians {ppo.get('ratio_of_medians', ppo['ratio']):.3f}) | >= 0.97 "
            f"| {ppo['machine']['cores']}-core CPU |"
        )
    scaling = _load("gmi_scaling")
    if scaling:
        r = scaling["ratios_vs_one_gmi"]

        def typical(layout: str) -> float:  # median over the repeats
            return statistics.median(x["env_steps_per_s"] for x in scaling["runs"][layout])

        one = typical("1")
        for t in (k for k in scaling["runs"] if k != "1"):
            mine = typical(t)
            per_gpu, _, cores = t.partition("/")
            shown = f"gmi.per_gpu={per_gpu}" + (f" gmi.cores={cores}" if cores else "")
            out.append(
                f"| Ant PPO env steps/s, {scaling['total_envs']} envs in total, {shown} "
                f"| {mine:,.0f} | gmi.per_gpu=1: {one:,.0f} | **{r[t]:.2f}** "
                f"| {'>= 0.9' if per_gpu == '3' else '>= 1.3'} "
                f"| {scaling['machine']['cores']}-core CPU |"
            )
    planner = _load("planner_vs_grid")
    if planner:
        best = max(g["env_steps_per_s"] for g in planner["grid"])
        ratio = planner["pick_over_grid_best"]
        out.append(
            f"| Ant PPO env steps/s of the planner's pick ({planner['pick']}), "
            f"{planner['total_envs']} envs per device, GMIs 1-4 | {ratio * best:,.0f} "
            f"| best of the grid ({planner['grid_best']}): {best:,.0f} "
            f"| **{ratio:.2f}** (search time / grid time "
            f"{planner['search_over_grid_time']:.2f}) | >= 0.95 "
            f"| {planner['machine']['cores']}-core CPU |"
        )
    latency = _load("reduction_latency")
    if latency:
        cores = latency["machine"]["cores"]
        for r in latency["rows"]:
            flat, auto = r["seconds"]["flat gloo"], r["seconds"]["auto"]
            out.append(
                f"| gradient reduction, {r['params']:,} params, {r['g']} devices x {r['t']} GMIs "
                f"| auto ({r['auto_strategy']}) {auto * 1e3:.2f} ms "
                f"| one flat gloo all-reduce {flat * 1e3:.2f} ms "
                f"| **{r['ratio_vs_flat']['auto']:.2f}** | <= 1.0 | {cores}-core CPU |"
            )
    ipc = _load("intra_gpu_reduction")
    if ipc:
        gpu = ipc["device"]
        for r in ipc["latency"]:
            t = r["seconds"]
            out.append(
                f"| reduction inside one GPU, {r['gmis']} GMIs, {r['size']} "
                f"| CUDA IPC {t['cuda ipc'] * 1e3:.3f} ms "
                f"| host-staged {t['host-staged shm'] * 1e3:.3f} ms "
                f"| **{r['host_staged_over_ipc']:.2f}** (host-staged / IPC) | >= 5 | {gpu} |"
            )
        e2e = {k: statistics.median(v) for k, v in ipc["ant_ppo_env_steps_per_s"].items()}
        out.append(
            f"| Ant PPO env steps/s (median of runs), 3 MPS GMIs | ipc {e2e['ipc']:,.0f} "
            f"| host-staged {e2e['shm']:,.0f} "
            f"| **{ipc['ant_ppo_ipc_over_host_staged']:.2f}** | | {gpu} |"
        )
    parity = _load("learning_parity")
    if parity:
        cores = parity["machine"]["cores"]
        n = len({r["seed"] for r in parity["rows"]})
        for score, label in (("meter", "reward meter at the end"), ("play", "played return")):
            s = parity["summary"][score]
            out.append(
                f"| Ant, 3 GMIs vs 1 at {parity['samples_per_run']:,} samples, {label} "
                f"({n} seeds) | {s['three_gmis_mean']:.0f} +- {s['three_gmis_std']:.0f} "
                f"| 1 GMI {s['one_gmi_mean']:.0f} +- {s['one_gmi_std']:.0f} "
                f"| **{s['three_over_one']:.2f}** | as well, within seed noise "
                f"| {cores}-core CPU |"
            )
    curves = _load("learning_curves")
    if curves:
        c, a = curves["cartpole"], curves["ant"]
        out.append(
            f"| Cartpole time to mean reward 400 | {c['time_to_target_s']:.1f} s "
            f"({c['frames_to_target']:,} frames) | | | <= 180 s | "
            f"{curves['machine']['cores']}-core CPU |"
        )
        out.append(
            f"| Ant mean episode reward, {a['epochs']} epochs on CPU | "
            f"{a['curve'][0][2]:.1f} -> {a['final_reward']:.1f} in {a['curve'][-1][1]:.0f} s "
            f"| | | rising | {curves['machine']['cores']}-core CPU |"
        )
    tasks = _load("task_learning")
    for task, t in (tasks or {}).items():
        if isinstance(t, dict) and "curve" in t:
            out.append(
                f"| {task} mean episode reward, {t['epochs']} epochs on CPU | "
                f"{t['first_reward']:.1f} -> {t['final_reward']:.1f} in {t['wall_s']:.0f} s "
                f"| | | rising | {tasks['machine']['cores']}-core CPU |"
            )
    return (
        out
        + async_rows()
        + randomization_rows()
        + startup_rows()
        + pbt_rows()
        + sweep_rows()
        + pruning_rows()
        + mjx_compile_rows()
        + compile_fidelity_rows()
    )


def async_rows() -> list[str]:
    """Async training and serving (bench/async_*.py, channel_transfer.py, serve_scaling.py)."""
    out = []
    transfer = _load("channel_transfer")
    if transfer:
        per_mode = transfer["transitions_per_s"]
        multi = statistics.median(per_mode.get("multi/host", per_mode.get("multi", [0])))
        uni = statistics.median(per_mode.get("uni/host", per_mode.get("uni", [0])))
        out.append(
            f"| channels alone, 2 producers x Ant-shaped steps, transitions/s "
            f"| multi {multi:,.0f} | uni {uni:,.0f} "
            f"| **{transfer['ratio_multi_over_uni']:.2f}** | >= 1.2 "
            f"| {transfer['machine']['cores']}-core CPU |"
        )
    channels = _load("async_channels")
    if channels:
        runs = channels["runs"]
        for key, name in (("pps", "PPS"), ("ttop", "TTOP")):
            multi = statistics.median(r[key] for r in runs["multi"])
            uni = statistics.median(r[key] for r in runs["uni"])
            out.append(
                f"| async Ant {name}, 1 trainer + 2 actors | multi {multi:,.0f} | uni {uni:,.0f} "
                f"| **{channels['ratios'][key]:.2f}** | >= 1.2 "
                f"| {channels['machine']['cores']}-core CPU |"
            )
    duel = _load("async_vs_sync")
    if duel:
        a, b = duel["runs"]["async"], duel["runs"]["sync"]
        out.append(
            f"| Ant samples trained/s, 3 GMIs, same total envs | async {a['samples_per_s']:,.0f} "
            f"(reward {a['reward']:.0f}) | sync {b['samples_per_s']:,.0f} (reward "
            f"{b['reward']:.0f}) | **{duel['ratio_async_over_sync_samples_per_s']:.2f}** | "
            f"| {duel['machine']['cores']}-core CPU |"
        )
    serve = _load("serve_scaling")
    if serve:
        base = statistics.median(serve["pps"]["1"])
        for t in ("2", "3"):
            out.append(
                f"| Ant serving PPS, gmi.per_gpu={t}, same total envs "
                f"| {statistics.median(serve['pps'][t]):,.0f} | one process {base:,.0f} "
                f"| **{serve['ratios_over_one_process'][t]:.2f}** | > 1 "
                f"| {serve['machine']['cores']}-core CPU |"
            )
    return out


def randomization_rows() -> list[str]:
    """Domain randomisation (bench/randomization_overhead.py, randomized_learning.py)."""
    out = []
    for name, backend in (
        ("randomization_overhead", "mujoco"),
        ("randomization_overhead_mjx", "mjx"),
    ):
        run = _load(name)
        for task, r in (run or {}).get("tasks", {}).items():
            on, off = (statistics.median(r["env_steps_per_s"][k]) for k in ("on", "off"))
            out.append(
                f"| {task} env steps/s, randomisation on ({backend}) | {on:,.0f} | off {off:,.0f} "
                f"| **{r['on_over_off']:.2f}** | >= 0.9 | {run['machine']['cores']}-core CPU |"
            )
    learn = _load("randomized_learning")
    if learn:
        out.append(
            f"| ShadowHand reward gained, randomised "
            f"| {learn['randomised']['gain']:.0f} | plain {learn['plain']['gain']:.0f} "
            f"| **{learn['randomised_gain_over_plain_gain']:.2f}** | > 0 "
            f"| {learn['machine']['cores']}-core CPU |"
        )
    return out


def startup_rows() -> list[str]:
    """Time to the first epoch (bench/startup.py)."""
    run = _load("startup")
    if not run:
        return []
    med, ratio, target = run["median_s"], run["ratios"], run["targets"]
    cores = f"{run['machine']['cores']}-core CPU"
    return [
        f"| Ant start-up to epoch 1, C engine, warm cache | {med['c_1gmi_warm']:.2f} s "
        f"| bare import of torch, jax, mujoco, rl_games {med['bare_import']:.2f} s "
        f"| **{ratio['c_warm_over_bare_import']:.2f}** "
        f"| <= {target['c_warm_over_bare_import']} | {cores} |",
        f"| Ant start-up to epoch 1, MJX, warm cache | {med['mjx_warm']:.2f} s "
        f"| cold cache {med['mjx_cold']:.2f} s | **{ratio['mjx_warm_over_cold']:.2f}** "
        f"| <= {target['mjx_warm_over_cold']} | {cores} |",
        f"| Ant start-up to epoch 1, 3 GMIs, warm cache | {med['c_3gmi_warm']:.2f} s "
        f"| 1 GMI {med['c_1gmi_warm']:.2f} s | **{ratio['three_over_one']:.2f}** "
        f"| <= {target['three_over_one']} | {cores} |",
    ]


def pbt_rows() -> list[str]:
    """A population against the same members trained independently (bench/pbt_population.py)."""
    out = []
    for name, task in (("pbt_population", "Cartpole"), ("pbt_population_ant", "Ant")):
        run = _load(name)
        if not run:
            continue
        a, b = run["aggregate"]["pbt"], run["aggregate"]["independent"]
        ratio = run["aggregate"]["pbt_over_independent"]["best_at_equal_time"]
        seeds = len(run["per_seed"])
        out.append(
            f"| {task} PBT, population of 3, best member's objective at equal wall time "
            f"({seeds} seeds, {run['settings']['epochs']} epochs) | {a['best_at_equal_time']:.1f} "
            f"| same members independent {b['best_at_equal_time']:.1f} | **{ratio:.3f}** "
            f"| | {run['machine']['cores']}-core CPU |"
        )
    return out


def sweep_rows() -> list[str]:
    """A seed sweep packed onto GMIs against Hydra's basic launcher (bench/sweep_packing.py)."""
    out = []
    for name, target in (("sweep_packing", ">= 1.15"), ("sweep_packing_gpu", ">= 2")):
        run = _load(name)
        if not run:
            continue
        where = run["card"] if name.endswith("gpu") else f"{run['machine']['cores']}-core CPU"
        last = run["rounds"][-1]
        rewards = " / ".join(
            f"{a if a is None else round(a)} vs {b if b is None else round(b)}"
            for a, b in zip(
                last["packed"]["final_rewards"], last["sequential"]["final_rewards"], strict=False
            )
        )
        out.append(
            f"| {run['task']} seed sweep, {len(run['seeds'])} jobs, hydra/launcher=gmi "
            f"{run['per_gpu']} a device: sweep wall time (final rewards packed vs sequential: "
            f"{rewards}) | {run['packed_wall_s']:.0f} s | basic launcher, one at a time "
            f"{run['sequential_wall_s']:.0f} s | **{run['ratio']:.2f}** less time | {target} "
            f"| {where} |"
        )
    return out


def pruning_rows() -> list[str]:
    """The same learning-rate sweep pruned and not (bench/sweep_pruning.py)."""
    run = _load("sweep_pruning")
    if not run:
        return []
    base = run["sweeps"]["none"]
    out = []
    for prune, verdict in run["verdicts"].items():
        r = run["sweeps"][prune]
        mine, theirs = r["best_config"].split("=")[-1], base["best_config"].split("=")[-1]
        if verdict["same_best_config"]:
            found = f"same best config, {mine}"
        else:
            noise = run["seed_noise"]
            good = "as good" if verdict["as_good_within_seed_noise"] else "worse"
            found = (
                f"best {mine} vs {theirs}, over {len(noise[mine]['rewards'])} more seeds "
                f"{good}: "
                f"{noise[mine]['mean']:.0f} +- {noise[mine]['std']:.0f} vs "
                f"{noise[theirs]['mean']:.0f} +- {noise[theirs]['std']:.0f}"
            )
        out.append(
            f"| Cartpole learning-rate sweep, {len(run['grid'])} jobs 2 at a time, "
            f"hydra.launcher.prune={prune}: wall time ({r['pruned_jobs']} pruned; {found}) "
            f"| {r['wall_s']:.0f} s | no pruning {base['wall_s']:.0f} s "
            f"| **{verdict['wall_time_ratio']:.2f}** less time | >= 2, same best config "
            f"| {run['machine']['cores']}-core CPU |"
        )
    return out


def mjx_compile_rows() -> list[str]:
    """3 GMIs vs 1 on the GPU's code paths run on the CPU (bench/mjx_compile_learning.py)."""
    run = _load("mjx_compile_learning")
    if not run:
        return []
    out = []
    for v in run["verdicts"]:
        rows = {
            r["gmis"]: r
            for r in run["runs"]
            if r["seed"] == v["seed"] and r["torch_compile"] == v["torch_compile"]
        }
        last = str(v["final_epoch"])
        one, three = (rows[g]["reward_at"][last] for g in (1, 3))
        out.append(
            f"| Ant on MJX, torch.compile {'on' if v['torch_compile'] else 'off'}, 3 GMIs vs 1 "
            f"at equal samples, reward at epoch {last} (seed {v['seed']}) | {three:.0f} "
            f"| 1 process {one:.0f} | **{v['three_over_one_reward']:.2f}** | "
            + ("as well: " if v["within_one_process_spread"] else "worse: ")
            + f"1-process low over seeds {v['one_process_low_over_seeds']:.0f} "
            f"| {run['machine']['cores']}-core CPU |"
        )
    return out


def compile_fidelity_rows() -> list[str]:
    """Compiled against eager, 3 GMIs against 1 process (bench/compile_fidelity.py)."""
    run = _load("compile_fidelity")
    if not run:
        return []
    onsets = "/".join(str(run["pairs"][g]["onset_epoch"]) for g in ("3", "1"))
    return [
        "| Ant on MJX: torch.compile's drift from eager, 3 GMIs over 1 process (geometric mean "
        f"over {len(run['pairs']['1']['drift'])} epochs) | {run['drift_ratio_three_over_one']:.2f} "
        f"| 1 process 1.00 | **{run['drift_ratio_three_over_one']:.2f}** | compile changes 3 "
        f"synced GMIs no more than one process (drift past 1e-3 at epoch {onsets}) "
        f"| {run['machine']['cores']}-core CPU |"
    ]


def main() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text()
    table = "\n".join([START, *rows(), END])
    text = re.sub(re.escape(START) + ".*?" + re.escape(END), table, text, flags=re.S)
    readme.write_text(text)
    print("\n".join(rows()))


if __name__ == "__main__":
    main()
