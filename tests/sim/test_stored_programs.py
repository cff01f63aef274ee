"""Stored programs: a fresh process loads them without lowering and gets the same results as a
plain jit; a program under another key or for other arguments is compiled, not loaded; a damaged
file is exported again and replaced; without a compile cache nothing is kept."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.helpers import assert_ok

# One process: a program that calls LAPACK (a Cholesky factor) and donates its first argument,
# kept under --key; prints what it computed and how its programs came to be.
PROGRAM = """
import json, sys
from pathlib import Path
import jax, jax.numpy as jnp
from isaacgymenvs_gmi.sim.compile_cache import compile_counts, use_compile_cache
from isaacgymenvs_gmi.sim.stored_programs import stored_jit

cache, key, size = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
use_compile_cache(Path(cache) if cache != "off" else None)
counts = compile_counts()

def step(state, x):
    m = x @ x.T + jnp.eye(x.shape[0])
    return {"total": state["total"] + jnp.linalg.cholesky(m).sum()}, m.trace()

program = stored_jit(step, name="probe", key=key, donate_argnums=(0,))
state = {"total": jnp.zeros(())}
first = state["total"]
for n in (size, size + 1, size):  # another signature in between: both programs stay usable
    state, trace = program(state, jnp.arange(n * n, dtype=jnp.float32).reshape(n, n) / 10)
print(json.dumps({
    "total": float(state["total"]), "trace": float(trace), "donated": first.is_deleted(),
    "whole": counts.loaded_whole, "compiled": counts.compiled, "loaded": counts.loaded,
}))
"""


def _run(cache: Path | str, key: str = "a", size: int = 3) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(cache), key, str(size)],
        capture_output=True,
        text=True,
    )
    assert_ok(proc)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _files(cache: Path) -> list[Path]:
    return sorted((cache / "programs").glob("probe-*.exp"))


def test_a_fresh_process_loads_the_programs_whole_and_computes_the_same(tmp_path):
    cache = tmp_path / "cache"
    cold = _run(cache)
    assert cold["whole"] == 0 and cold["compiled"] >= 2 and cold["donated"]
    assert len(_files(cache)) == 2  # one per signature
    warm = _run(cache)
    assert warm["whole"] == 2 and warm["compiled"] == 0 and warm["donated"]
    assert (warm["total"], warm["trace"]) == (cold["total"], cold["trace"])
    plain = _run("off")  # a plain jax.jit
    assert (plain["total"], plain["trace"]) == (cold["total"], cold["trace"])


def test_another_key_compiles_and_a_damaged_file_is_replaced(tmp_path):
    cache = tmp_path / "cache"
    reference = _run(cache, key="a")
    other = _run(cache, key="b")
    assert other["whole"] == 0 and len(_files(cache)) == 4
    for path in _files(cache):
        path.write_bytes(path.read_bytes()[:100])  # half-written by some other tool
    again = _run(cache, key="a")
    assert again["whole"] == 0 and again["total"] == reference["total"]
    assert _run(cache, key="a")["whole"] == 2  # the damaged files were replaced


def test_without_a_compile_cache_nothing_is_kept(tmp_path):
    result = _run("off")
    assert result["whole"] == 0 and result["donated"]
    assert not any(tmp_path.iterdir())
