"""Does rl-games' Ant network go non-finite under bf16 autocast in MPS clients, without the rest?

The multi-GMI NaN (bench/results/gpu_h100/bisect/) needs mixed precision and several MPS GMIs and
shows in the mu head's output. This strips training down to that: K processes, each an MPS client
capped at P % of the SMs, each training rl-games' own Ant network (the task's network settings,
built by rl-games' model builder) on random normalised observations with PPO-shaped losses under
``torch.amp.autocast(bfloat16)`` and a gradient scaler, as rl-games' calc_gradients does. Every
step checks the mu head: its output under autocast, and the same product recomputed in float32 from
the same operands (a non-finite autocast output from finite operands whose float32 product is
finite is the kernel's fault). Variants change one thing: the cap, the client count, the rows,
``DISABLE_ADDMM_CUDA_LT=1`` (torch's ``addmm`` with bias through cuBLAS instead of cuBLASLt), JAX
in the same process (imported first, before torch loads its CUDA libraries, or imported after it
with a jitted XLA GEMM run between torch's steps, as the MJX step runs between updates in a GMI;
and the latter with XLA's own cuBLASLt use off), and cuBLASLt without a workspace with its API
log on. Each outcome names a cause: two library copies (JAX first / between), split-K kernels (no
workspace), the cap alone (one client), or concurrent clients.

    python bench/gpu_gemm_repro.py --out OUT/gemm.json [--seconds 8] [--only NAME ...]
        [--budget-s S]   # variants in order, none started past S seconds
    python bench/gpu_gemm_repro.py --device cpu --seconds 1   # a dry run of the code paths

Prints one line per variant and writes every client's counts to the JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OBS, ACTIONS = 60, 8  # Ant's observation and action widths
NO_XLA_LT = {"XLA_FLAGS": "--xla_gpu_enable_cublaslt=false"}
LT_BARE = {"CUBLASLT_WORKSPACE_SIZE": "0", "CUBLASLT_LOG_LEVEL": "5"}  # log file set per run
# name, clients, SM percent (None: no MPS daemon), rows per minibatch, extra environment, JAX
# (none | first: imported before torch | between: a jitted XLA GEMM between torch's steps)
VARIANTS = [
    ("mps3_cap33", 3, 33, 10928, {}, "none"),
    ("mps3_cap33_jax_between", 3, 33, 10928, {}, "between"),
    ("mps3_cap33_jax_first", 3, 33, 10928, {}, "first"),
    ("mps3_cap33_jax_between_xla_no_lt", 3, 33, 10928, NO_XLA_LT, "between"),
    ("mps3_cap33_lt_no_workspace", 3, 33, 10928, LT_BARE, "none"),
    ("mps1_cap33", 1, 33, 10928, {}, "none"),
    ("mps3_cap33_no_lt", 3, 33, 10928, {"DISABLE_ADDMM_CUDA_LT": "1"}, "none"),
    ("mps3_uncapped", 3, 100, 10928, {}, "none"),
    ("mps3_cap33_rows8192", 3, 33, 8192, {}, "none"),
    ("direct1", 1, None, 10928, {}, "none"),
]


def network_params() -> dict:
    import yaml

    with open(ROOT / "cfg/train/AntPPO.yaml") as f:
        params = yaml.safe_load(f)["params"]
    return {"model": params["model"], "network": params["network"]}


def xla_gemm(device: str):
    """A jitted XLA program the size of the network's first layer (its GEMM and bias), on
    JAX's device: called between torch's steps."""
    import jax
    import jax.numpy as jnp

    gpu = [d for d in jax.devices() if d.platform == "gpu"]
    target = gpu[0] if device == "cuda" and gpu else jax.devices("cpu")[0]
    x = jax.device_put(jnp.ones((4096, OBS), jnp.float32), target)
    w = jax.device_put(jnp.full((OBS, 256), 0.01, jnp.float32), target)
    b = jax.device_put(jnp.zeros((256,), jnp.float32), target)
    step = jax.jit(lambda x, w, b: jnp.tanh(x @ w + b).sum())
    return lambda: step(x, w, b).block_until_ready()


def client(rows: int, seconds: float, device: str, seed: int, jax_mode: str = "none") -> dict:
    """Train the Ant network for ``seconds``; count non-finite steps and kernel faults.
    ``jax_mode``: JAX imported ``first`` (before torch), or a jitted XLA GEMM run ``between``
    torch's steps, or ``none``."""
    if jax_mode == "first":
        import jax

        jax.devices()  # JAX's CUDA libraries loaded before torch's
    import torch
    from rl_games.algos_torch.model_builder import ModelBuilder

    between = xla_gemm(device) if jax_mode == "between" else (lambda: None)

    torch.manual_seed(seed)
    model = (
        ModelBuilder()
        .load(network_params())
        .build(
            {
                "actions_num": ACTIONS,
                "input_shape": (OBS,),
                "num_seqs": rows,
                "value_size": 1,
                "normalize_value": True,
                "normalize_input": True,
            }
        )
        .to(device)
    )
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    scaler = torch.amp.GradScaler(device, enabled=device == "cuda")
    head = model.a2c_network.mu
    seen: dict = {}
    head.register_forward_hook(lambda m, i, o: seen.update(x=i[0].detach(), y=o.detach()))
    counts = dict(
        steps=0,
        bad_mu=0,
        bad_values=0,
        bad_losses=0,
        kernel_faults=0,
        skipped=0,
        bad_rows_max=0,
        max_err=0.0,
    )
    first_fault = None
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end:
        between()
        obs = torch.randn(rows, OBS, device=device).clamp_(-5, 5)
        actions = torch.randn(rows, ACTIONS, device=device)
        adv, returns = torch.randn(rows, device=device), torch.randn(rows, 1, device=device)
        with torch.amp.autocast(device, dtype=torch.bfloat16):
            out = model({"is_train": True, "prev_actions": actions, "obs": obs})
            mu, values = out["mus"], out["values"]
            a_loss = (out["prev_neglogp"] * adv).mean()
            c_loss = (values.float() - returns).pow(2).mean()
            b_loss = (mu.float().clamp(min=1.1) - 1.1).pow(2).sum(-1).mean()
            loss = a_loss + 2.0 * c_loss + 1e-4 * b_loss - 0.0 * out["entropy"].mean()
        counts["steps"] += 1
        bad_rows = int((~torch.isfinite(seen["y"])).any(-1).sum())
        counts["bad_mu"] += bad_rows > 0
        counts["bad_rows_max"] = max(counts["bad_rows_max"], bad_rows)
        counts["bad_values"] += not bool(torch.isfinite(values).all())
        counts["bad_losses"] += not bool(torch.isfinite(loss))
        ref = torch.nn.functional.linear(seen["x"].float(), head.weight.float(), head.bias.float())
        if bad_rows and bool(torch.isfinite(seen["x"]).all()) and bool(torch.isfinite(ref).all()):
            counts["kernel_faults"] += 1
            if first_fault is None:
                rows_bad = (~torch.isfinite(seen["y"])).any(-1).nonzero().flatten()
                first_fault = {
                    "step": counts["steps"],
                    "bad_rows": rows_bad[:16].tolist(),
                    "input_dtype": str(seen["x"].dtype),
                    "out_dtype": str(seen["y"].dtype),
                }
        good = torch.isfinite(seen["y"]).all(-1)
        if bool(good.any()):
            err = (seen["y"].float()[good] - ref[good]).abs().max()
            counts["max_err"] = max(counts["max_err"], float(err))
        opt.zero_grad(set_to_none=True)
        scale = scaler.get_scale() if scaler.is_enabled() else 1.0
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if scaler.is_enabled() and scaler.get_scale() < scale:
            counts["skipped"] += 1
    if device == "cuda":
        torch.cuda.synchronize()
        counts["sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
    counts["first_fault"] = first_fault
    counts["finite_weights"] = all(bool(torch.isfinite(p).all()) for p in model.parameters())
    return counts


@contextlib.contextmanager
def daemon(needed: bool):
    if not needed:
        yield
        return
    sys.path.insert(0, str(ROOT))
    from isaacgymenvs_gmi.gmi.mps import mps_daemon

    with mps_daemon():
        yield


def run_variant(name, clients, percent, rows, extra, jax_mode, args) -> dict:
    env = {**os.environ, **extra}
    if percent is not None:
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(percent)
    if "CUBLASLT_LOG_LEVEL" in extra:  # one API log per client (%i: its process id)
        logs = Path(args.out).parent if args.out else Path(".")
        env["CUBLASLT_LOG_FILE"] = str(logs / f"cublaslt_{name}_%i.log")
    cmd = [
        sys.executable,
        __file__,
        "--client",
        "--rows",
        str(rows),
        "--seconds",
        str(args.seconds),
        "--device",
        args.device,
        "--jax",
        jax_mode,
    ]
    with daemon(percent is not None and args.device == "cuda"):
        procs = [
            subprocess.Popen(
                [*cmd, "--seed", str(i)],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(clients)
        ]
        results = []
        for p in procs:
            stdout, stderr = p.communicate(timeout=args.seconds + 120)
            lines = stdout.strip().splitlines()
            results.append(
                json.loads(lines[-1]) if p.returncode == 0 and lines else {"error": stderr[-2000:]}
            )
    total = {
        k: sum(r.get(k, 0) for r in results)
        for k in ("steps", "bad_mu", "bad_values", "bad_losses", "kernel_faults", "skipped")
    }
    print(
        f"{name} [{clients} clients, SM {percent}%, rows {rows}, JAX {jax_mode}, "
        f"{extra or 'default'}]: {total};"
        f" max |bf16 - fp32| {max(r.get('max_err', 0) for r in results):.3g}"
        f"{'; ERROR ' + results[0]['error'][-300:] if 'error' in results[0] else ''}",
        flush=True,
    )
    return {
        "name": name,
        "clients": clients,
        "sm_percent": percent,
        "rows": rows,
        "env": extra,
        "jax": jax_mode,
        "total": total,
        "per_client": results,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, default=10928, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--budget-s", type=float, default=None)
    jax_modes = ["none", "first", "between"]
    ap.add_argument("--jax", default="none", choices=jax_modes, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        print(json.dumps(client(args.rows, args.seconds, args.device, args.seed, args.jax)))
        return
    report = {"variants": [], "not_run": []}
    start = time.monotonic()
    for v in VARIANTS:
        if args.only and v[0] not in args.only:
            continue
        if args.budget_s and time.monotonic() - start + args.seconds + 30 > args.budget_s:
            report["not_run"].append(v[0])
            print(f"{v[0]}: not run (budget of {args.budget_s:.0f} s spent)", flush=True)
            continue
        if args.device == "cpu":  # the dry run: one small client per variant
            v = (v[0], 1, v[2], 256, v[4], v[5])
        report["variants"].append(run_variant(*v, args))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
