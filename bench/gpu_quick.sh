#!/usr/bin/env bash
# The most telling GPU checks in one call of under 10 minutes, most telling first:
#
# 1. facts: the card, driver and versions;
# 2. nan_test: 3 MPS GMIs x 1366 envs train Ant finite with a rising reward (the case that went
#    NaN on an H200), its train.py output kept;
# 3. if it passes: the bisection's controls that say why (the unheld hand-offs of before, and one
#    process at the same size), then the headline (one process vs 3 MPS GMIs capped and uncapped,
#    same total envs, the compile cache the test filled);
#    if it fails: the bisection instead, the first non-finite minibatch replayed and explained
#    (gmi.debug.trace_nonfinite), then uncapped MPS clients and the sizes in between.
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

TESTS_LIMIT=220 bash "$here/gpu_suite.sh" "$out" facts nan_test
if grep -q " 1 passed" "$out/nan_test.log"; then
    echo "== nan_test passed: controls, then the headline ($(left) s left)"
    BISECT_ONLY="three_bare_handoffs one_process_1366" BISECT_EPOCHS=3 \
        BISECT_LIMIT=$(($(left) < 300 ? $(left) / 2 : 150)) bash "$here/gpu_suite.sh" "$out" bisect
    per_run=$((($(left) - 30) / 3))
    per_run=$((per_run > 90 ? 90 : per_run))
    runs=(one:1 mps3:3)
    if ((per_run >= 60)); then runs+=("mps3_uncapped:3:gmi.sm_percent=[100,100,100]"); fi
    if ((per_run < 60)); then per_run=$((($(left) - 20) / 2)); fi
    echo "== headline: ${runs[*]}, ${per_run} s each"
    timeout -k 10 $(($(left) - 5)) "$py" "$here/gpu_headline.py" --out "$out/headline" \
        --limit-s "$per_run" --no-warm --cache "$cache" --runs "${runs[@]}" >"$out/headline.log" 2>&1
    echo "== headline: exit $?"
    tail -n 20 "$out/headline.log"
else
    echo "== nan_test did not pass: the bisection ($(left) s left)"
    BISECT_ONLY="three_traced three_uncapped two_gmis_1366 three_gmis_1024 three_no_fp16" \
        BISECT_EPOCHS=3 BISECT_LIMIT=$(($(left) - 10)) bash "$here/gpu_suite.sh" "$out" bisect
fi
rm -f "$out/results.tgz"
tar -czf "$out.tgz" --exclude='*.pth' --exclude='xdg-cache' --exclude='compile-cache' \
    --exclude='summaries' -C "$(dirname "$out")" "$(basename "$out")"
echo "== done after ${SECONDS}s: $out.tgz"
