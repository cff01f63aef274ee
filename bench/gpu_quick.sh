#!/usr/bin/env bash
# The GPU window for "GMIs on a GPU learn as well as one process": the decisive checks first, in
# one call of under 10 minutes.
#
# B1 (~1.5 min) facts: the card, driver and versions; the probe of jax-ml/jax#40633 (eager ops
#    wrong on jax 0.11.0/0.11.1 with CUDA 13; the card runs jax 0.11.2); this issue's GPU tests:
#    each framework's CUDA libraries named (gmi/gpu_identity.py) and one two-GMI update compiled
#    against eager under bf16 autocast (<= 1e-5).
# B3 (~5.5 min) the learning gap, 60 epochs each, the skipped-step counter and the numerical
#    audit (every 10 epochs) on: one process; 3 MPS GMIs as configured (the multi-GMI NaN check
#    through the code path: DISABLE_ADDMM_CUDA_LT is not exported, gmi/mps.py sets it); in fp32;
#    with gmi.debug.sync=true; eager (no torch.compile); host-staged gradients. The ingredient
#    that closes the gap is the bug; an audit that fails names the tensor and the GMI.
# B2 (what is left) cuBLASLt isolated (gpu_gemm_repro.py): a jitted XLA GEMM between torch's
#    steps, JAX imported first, XLA's cuBLASLt off, cuBLASLt without a workspace (API log), one
#    client under a 33 % cap.
#
# B3 runs before B2: the NaN is worked around, the learning gap is not. B4-B5 (the headline at
# each setup's best env count, packed sweeps) are gpu_suite.sh's headline and sweep steps, for a
# second call.
#
#   bash bench/gpu_quick.sh OUTDIR [BUDGET_S]      (BUDGET_S: whole-call limit, default 540)
#   DRY_RUN=1 bash bench/gpu_quick.sh OUTDIR       (tiny, on the CPU: keeps the script working)
#
# Everything lands in OUTDIR, plus OUTDIR.tgz (logs and JSON, no checkpoints or caches).
set -uo pipefail
out=${1:?usage: bench/gpu_quick.sh OUTDIR [BUDGET_S]}
budget=${2:-540}
dry=${DRY_RUN:-}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
cd "$here/.."
mkdir -p "$out"
links=()  # a plain checkout: tasks/ and patches/ as the package's subpackages (as gpu_suite.sh)
for sub in tasks patches; do
    if [[ ! -e isaacgymenvs_gmi/$sub ]] && ! "$py" -c "import isaacgymenvs_gmi.$sub" 2>/dev/null; then
        ln -s "../$sub" "isaacgymenvs_gmi/$sub" && links+=("isaacgymenvs_gmi/$sub")
    fi
done
trap 'rm -f "${links[@]}"' EXIT
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$out/xdg-cache}  # one compile cache for every step
unset DISABLE_ADDMM_CUDA_LT  # the fix must come through the code path
cache="$XDG_CACHE_HOME/isaacgymenvs_gmi/xla"
left() { echo $((budget - SECONDS)); }
step() {  # step NAME SECONDS CMD...: CMD under a limit, logged to OUTDIR/NAME.log, its tail shown
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s, $(left)s left): $*"
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    echo "== $name: exit $?"
    tail -n "${TAIL:-12}" "$out/$name.log"
}

# --- B1 -------------------------------------------------------------------------------------
if [[ -z $dry ]]; then
    step facts 60 bash -c "nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode,\
mig.mode.current --format=csv; $py -c 'import torch, jax, mujoco; print(\"torch\", \
torch.__version__, torch.version.cuda, torch.cuda.get_device_name(0)); print(\"jax\", \
jax.__version__, jax.devices()); print(\"mujoco\", mujoco.__version__)'"
    step jax_probe 60 "$py" bench/gpu_jax_probe.py --out "$out/jax_probe.json"
    step gpu_tests 150 "$py" -m pytest -m gpu -v -p no:cacheprovider \
        tests/gmi/test_gmi_gpu_identity.py tests/rl/test_rl_compiled_update.py
else
    step jax_probe 60 "$py" bench/gpu_jax_probe.py --device cpu --out "$out/jax_probe.json"
    step gpu_tests 300 "$py" -m pytest -v -p no:cacheprovider \
        tests/gmi/test_gmi_gpu_identity.py tests/rl/test_rl_compiled_update.py
fi

# --- B3 -------------------------------------------------------------------------------------
runs=(one:1 mps3:3 "mps3_fp32:3:train.params.config.mixed_precision=False"
    "mps3_sync:3:gmi.debug.sync=true" "mps3_eager:3:+train.params.config.torch_compile=False"
    "mps3_host_staged:3:gmi.intra_device=shm")
if [[ -z $dry ]]; then
    per_run=$((($(left) - 90) / ${#runs[@]}))
    per_run=$((per_run > 100 ? 100 : per_run))
    sizes=(--max-iterations 60 --limit-s "$per_run")
    audit_every=10
else
    sizes=(--dry-run)
    audit_every=2
fi
echo "== learning gap: ${runs[*]}"
TAIL=30 step learning_gap $(($(left) - 60)) "$py" bench/gpu_headline.py --out "$out/learning_gap" \
    --no-warm --cache "$cache" "${sizes[@]}" "gmi.debug.audit=$audit_every" --runs "${runs[@]}"

# --- B2 -------------------------------------------------------------------------------------
gemm=(mps3_cap33_jax_between mps3_cap33_jax_first mps3_cap33_jax_between_xla_no_lt
    mps3_cap33_lt_no_workspace mps1_cap33)
if [[ -z $dry ]]; then
    TAIL=8 step gemm $(($(left) - 15)) "$py" bench/gpu_gemm_repro.py --out "$out/gemm/gemm.json" \
        --seconds 5 --budget-s $(($(left) - 25)) --only "${gemm[@]}"
else
    TAIL=8 step gemm 200 "$py" bench/gpu_gemm_repro.py --device cpu --seconds 1 \
        --out "$out/gemm/gemm.json" --only "${gemm[@]}"
fi

tar -czf "$out.tgz" --exclude='*.pth' --exclude='xdg-cache' --exclude='compile-cache' \
    --exclude='summaries' -C "$(dirname "$out")" "$(basename "$out")"
echo "== done after ${SECONDS}s: $out.tgz"
