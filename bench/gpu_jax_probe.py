"""Does this JAX compute eager (per-operator) GPU ops right? A few seconds, before trusting it.

jax-ml/jax#40633 reports jax 0.11.0/0.11.1 on CUDA 13 returning wrong values and NaNs from
per-operator (non-jitted) kernels while the same code jitted, and jax 0.10.2, are right; its
reporter's probe points at stale buffers (a result depends on the statement before it). The
lent card runs jax 0.11.2; the project pins 0.10.2. This checks a handful of results against
their known values: eager, each also right after every other check, and jitted. The MJX step is
jitted, but a backend's small host-side ops (keys, ``jnp.asarray`` of actions) are eager.

    python bench/gpu_jax_probe.py [--out OUT.json] [--device cpu]   # cpu: a dry run

Prints one line per wrong result (or the first round when all are right) and a verdict; exits 1
if any is wrong.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

N = 4096


def probes(jnp, jax) -> dict:
    """name -> (function of its inputs, inputs, check of its result -> bool)."""
    key = jax.random.PRNGKey(0)
    a = np.arange(64.0).reshape(8, 8) / 64
    return {
        "sqrt(512)": (jnp.sqrt, (np.float32(512.0),), lambda v: abs(v - math.sqrt(512)) < 1e-3),
        "ones(4)+1": (lambda x: x + 1, (np.ones(4, np.float32),), lambda v: (v == 2).all()),
        "random.normal": (
            lambda k: jax.random.normal(k, (N,)),
            (key,),
            lambda v: np.isfinite(v).all() and abs(v.mean()) < 0.1 and abs(v.std() - 1) < 0.1,
        ),
        "random.uniform": (
            lambda k: jax.random.uniform(k, (N,)),
            (key,),
            lambda v: np.isfinite(v).all() and v.min() >= 0 and v.max() < 1,
        ),
        "random.randint": (
            lambda k: jax.random.randint(k, (N,), 0, 10),
            (key,),
            lambda v: v.min() >= 0 and v.max() < 10,
        ),
        "matmul": (
            lambda x: (x @ x).sum(),
            (a.astype(np.float32),),
            lambda v: abs(v - (a @ a).sum()) < 1e-3,
        ),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="gpu", choices=["gpu", "cpu"])
    args = ap.parse_args()
    import jax
    import jax.numpy as jnp

    device = jax.devices(args.device)[0]
    checks = probes(jnp, jax)
    rows = []

    def run(mode: str, after: str, name: str) -> None:
        fn, inputs, good = checks[name]
        on_device = [jax.device_put(x, device) for x in inputs]
        value = np.asarray((jax.jit(fn) if mode == "jitted" else fn)(*on_device))
        ok = bool(good(value))
        shown = (
            value.tolist()
            if value.size <= 4
            else {"min": float(value.min()), "max": float(value.max())}
        )
        rows.append({"mode": mode, "after": after, "probe": name, "ok": ok, "value": shown})

    with jax.default_device(device):
        for name in checks:
            run("eager", "nothing", name)
        for before in checks:  # a stale buffer shows as a result that depends on its predecessor
            for name in checks:
                fn, inputs, _ = checks[before]
                fn(*(jax.device_put(x, device) for x in inputs))
                run("eager", before, name)
        for name in checks:
            run("jitted", "nothing", name)
    wrong = [r for r in rows if not r["ok"]]
    for r in wrong or rows[: len(checks)]:
        state = "ok" if r["ok"] else "WRONG"
        print(f"{r['mode']:>6} {r['probe']:<15} after {r['after']:<15} {state} {r['value']}")
    verdict = f"jax {jax.__version__} on {device.device_kind}: {len(wrong)} of {len(rows)} wrong"
    print(verdict)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"verdict": verdict, "rows": rows}, f, indent=1)
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()
