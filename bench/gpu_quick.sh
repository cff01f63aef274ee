#!/usr/bin/env bash
# The most telling GPU checks in one call of under 10 minutes, most telling first:
#
# 1. facts: the card, driver and versions;
# 2. gemm: rl-games' Ant network alone under bf16 autocast in capped MPS clients
#    (gpu_gemm_repro.py): does the mu head's product go non-finite without MJX, hand-offs or
#    collectives, and does cuBLAS instead of cuBLASLt (DISABLE_ADDMM_CUDA_LT=1) or no cap clear it;
# 3. the failing case (3 MPS GMIs x 1366 Ant envs, the task's settings) with its first non-finite
#    minibatch replayed and explained (gmi.debug.trace_nonfinite), then the same with
#    DISABLE_ADDMM_CUDA_LT=1;
# 4. if that is finite: the headline with it (one process vs 3 MPS GMIs, same total envs, both
#    with the setting, then one process without it); if not: the host-staged reduction and
#    uncapped MPS clients.
#
#   bash bench/gpu_quick.sh OUTDIR [BUDGET_S]      (BUDGET_S: whole-call limit, default 560)
#
# Every step has its own limit inside the budget. Everything lands in OUTDIR, plus OUTDIR.tgz
# (logs and JSON, no checkpoints or caches) for a caller that can fetch one file.
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

bash "$here/gpu_suite.sh" "$out" facts
echo "== gemm ($(left) s left)"
timeout -k 10 150 "$py" "$here/gpu_gemm_repro.py" --out "$out/gemm.json" --seconds 5 \
    >"$out/gemm.log" 2>&1
echo "== gemm: exit $?"
cat "$out/gemm.log"
BISECT_ONLY="three_traced three_no_lt" BISECT_EPOCHS=3 \
    BISECT_LIMIT=$(($(left) - 20)) bash "$here/gpu_suite.sh" "$out" bisect
if grep -q "^three_no_lt .*exit 0 .*learner finite" "$out/bisect.log"; then
    per_run=$((($(left) - 30) / 3))
    per_run=$((per_run > 90 ? 90 : per_run))
    runs=(one_no_lt:1:DISABLE_ADDMM_CUDA_LT=1 mps3_no_lt:3:DISABLE_ADDMM_CUDA_LT=1)
    if ((per_run >= 60)); then runs+=(one:1); else per_run=$((($(left) - 20) / 2)); fi
    echo "== headline: ${runs[*]}, ${per_run} s each"
    timeout -k 10 $(($(left) - 5)) "$py" "$here/gpu_headline.py" --out "$out/headline" \
        --limit-s "$per_run" --no-warm --cache "$cache" --runs "${runs[@]}" >"$out/headline.log" 2>&1
    echo "== headline: exit $?"
    tail -n 20 "$out/headline.log"
else
    echo "== still non-finite without cuBLASLt: the reduction and the cap ($(left) s left)"
    mv "$out/bisect.log" "$out/bisect_first.log"
    BISECT_ONLY="three_host_staged three_uncapped" BISECT_EPOCHS=3 \
        BISECT_LIMIT=$(($(left) - 10)) bash "$here/gpu_suite.sh" "$out" bisect
fi
rm -f "$out/results.tgz"
tar -czf "$out.tgz" --exclude='*.pth' --exclude='xdg-cache' --exclude='compile-cache' \
    --exclude='summaries' -C "$(dirname "$out")" "$(basename "$out")"
echo "== done after ${SECONDS}s: $out.tgz"
