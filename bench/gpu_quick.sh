#!/usr/bin/env bash
# The most telling GPU checks in one call of under 10 minutes, most telling first:
#
# 1. facts: the card, driver and versions;
# 2. nan_test: 3 MPS GMIs x 1366 envs train Ant finite with a rising reward (the case that went
#    non-finite until MPS clients kept torch's addmm off cuBLASLt), its train.py output kept;
# 3. if it passes: the headline, where GMIs lose time against one process (same total envs, each
#    run's epoch split into env steps, inference and update), and why 3 MPS GMIs learned less
#    per epoch than one process on an H100 (not so on the CPU): one process, 3 MPS GMIs as
#    configured, with host-staged gradients instead of CUDA IPC, in float32, without
#    torch.compile;
#    if it fails: the bisection, its first non-finite minibatch replayed and explained
#    (gmi.debug.trace_nonfinite), then the network alone in MPS clients (gpu_gemm_repro.py).
#
#   bash bench/gpu_quick.sh OUTDIR [BUDGET_S]      (BUDGET_S: whole-call limit, default 560)
#
# Every step has its own limit inside the budget. Everything lands in OUTDIR, plus OUTDIR.tgz
# (logs and JSON, no checkpoints or caches) for a caller that can fetch one file.
# Results: bench/results/gpu_h100/cublaslt/ (the NaN's cause), bench/results/gpu_h100/headline/.
set -uo pipefail
out=${1:?usage: bench/gpu_quick.sh OUTDIR [BUDGET_S]}
budget=${2:-560}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
cd "$here/.."
links=()  # a plain checkout: tasks/ and patches/ as the package's subpackages (as gpu_suite.sh)
for sub in tasks patches; do
    if [[ ! -e isaacgymenvs_gmi/$sub ]] && ! "$py" -c "import isaacgymenvs_gmi.$sub" 2>/dev/null; then
        ln -s "../$sub" "isaacgymenvs_gmi/$sub" && links+=("isaacgymenvs_gmi/$sub")
    fi
done
trap 'rm -f "${links[@]}"' EXIT
export XDG_CACHE_HOME=${XDG_CACHE_HOME:-$out/xdg-cache}  # one compile cache for every step
cache="$XDG_CACHE_HOME/isaacgymenvs_gmi/xla"
left() { echo $((budget - SECONDS)); }

TESTS_LIMIT=220 bash "$here/gpu_suite.sh" "$out" facts nan_test
if grep -q " 1 passed" "$out/nan_test.log"; then
    per_run=$((($(left) - 30) / 5))
    per_run=$((per_run > 100 ? 100 : per_run))
    runs=(one:1 mps3:3 mps3_host_staged:3:gmi.intra_device=shm
        mps3_fp32:3:train.params.config.mixed_precision=False
        mps3_eager:3:+train.params.config.torch_compile=False)
    echo "== headline: ${runs[*]}, ${per_run} s each"
    timeout -k 10 $(($(left) - 5)) "$py" "$here/gpu_headline.py" --out "$out/headline" \
        --limit-s "$per_run" --no-warm --cache "$cache" --runs "${runs[@]}" >"$out/headline.log" 2>&1
    echo "== headline: exit $?"
    tail -n 20 "$out/headline.log"
else
    echo "== nan_test did not pass: the bisection ($(left) s left)"
    BISECT_ONLY="three_traced three_uncapped three_no_fp16" BISECT_EPOCHS=3 \
        BISECT_LIMIT=$(($(left) - 110)) bash "$here/gpu_suite.sh" "$out" bisect
    timeout -k 10 $(($(left) - 10)) "$py" "$here/gpu_gemm_repro.py" --out "$out/gemm.json" \
        --seconds 5 >"$out/gemm.log" 2>&1
    cat "$out/gemm.log"
fi
rm -f "$out/results.tgz"
tar -czf "$out.tgz" --exclude='*.pth' --exclude='xdg-cache' --exclude='compile-cache' \
    --exclude='summaries' -C "$(dirname "$out")" "$(basename "$out")"
echo "== done after ${SECONDS}s: $out.tgz"
