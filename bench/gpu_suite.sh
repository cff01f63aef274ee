#!/usr/bin/env bash
# Everything that needs a CUDA GPU, in one go: the machine's facts, the GPU-marked tests, then the
# GPU benchmarks. Each step has its own time limit so one hang cannot eat the rest; a log of
# every step and an archive of bench/results land in OUTDIR.
#
#   bash bench/gpu_suite.sh OUTDIR [STEP ...]   (steps: headline bisect facts tests nan_test
#                                                tests_more reduction mjx channels sweep plan)
#
# Runs from a plain checkout with the dependencies importable (PYTHONPATH), without installing the
# project: setup.py maps the packages isaacgymenvs_gmi.tasks and .patches onto the top-level
# tasks/ and patches/ folders, so where they do not import the script links them in for its run.
# The headline took 412 s on an H200 (two runs of 200 s, before the warm reruns were added: each
# size now also restarts for 2 epochs from the compile cache, so runs default to 150 s). On an H100
# the other steps took about:
# facts 10 s, all GPU tests 372 s (now split: `tests`, the most valuable, sized to fit the
# window's second call after the headline; `tests_more`, the rest, for a later window), mjx 150 s,
# channels 40 s, reduction part 1 60 s (part 2 trains Ant twice and needs more than 300 s), plan
# 160 s for its first trial.
set -uo pipefail
out=${1:?usage: bench/gpu_suite.sh OUTDIR [STEP ...]}
shift
steps=${*:-headline facts tests reduction mjx channels}
py=${PYTHON:-python3}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
links=()
for sub in tasks patches; do
    if [[ ! -e isaacgymenvs_gmi/$sub ]] && ! "$py" -c "import isaacgymenvs_gmi.$sub" 2>/dev/null; then
        ln -s "../$sub" "isaacgymenvs_gmi/$sub" && links+=("isaacgymenvs_gmi/$sub")
    fi
done
trap 'rm -f "${links[@]}"' EXIT
# GPU tests in order of value: 3 MPS GMIs train Ant finite with a rising reward (the case that
# went NaN), the card is seen, an MPS daemon we start is stopped, GMIs sharing it reduce exactly,
# two MPS GMIs train, experience crosses CUDA IPC; then the rest
first_tests=(
    tests/gmi/test_gmi_gpu.py::test_three_mps_gmis_train_ant_finite_with_a_rising_reward
    tests/gmi/test_gmi_gpu.py::test_nvml_inventory_sees_the_gpu
    tests/gmi/test_gmi_gpu.py::test_mps_daemon_we_start_is_stopped
    tests/comm/test_comm_gpu.py
    "tests/gmi/test_gmi_gpu.py::test_two_gmis_train_on_one_gpu[mps]"
    tests/channels/test_channels_delivery.py
)
pytest_gpu=("$py" -m pytest -m gpu -v -p no:cacheprovider --durations=0)

step() {  # step NAME SECONDS CMD...: runs CMD under a limit, logging to OUTDIR/NAME.log
    local name=$1 limit=$2
    shift 2
    echo "== $name (limit ${limit}s): $*"
    local t0=$SECONDS
    timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    echo "== $name: exit $rc after $((SECONDS - t0))s"
    tail -n 25 "$out/$name.log"
}

for s in $steps; do
    case $s in
    headline)  # Ant training on MJX, 1 process vs 3 MPS GMIs, same total envs (gpu_headline.py)
        # HEADLINE_RUNS="NAME:K[:WORDS] ..." (gpu_headline.py --runs), HEADLINE_NO_WARM=1, HEADLINE_CACHE=DIR
        # shellcheck disable=SC2086
        step headline "${HEADLINE_STEP_LIMIT:-540}" "$py" bench/gpu_headline.py --out "$out/headline" \
            --limit-s "${HEADLINE_LIMIT_S:-150}" ${HEADLINE_NO_WARM:+--no-warm} \
            ${HEADLINE_CACHE:+--cache $HEADLINE_CACHE} ${HEADLINE_RUNS:+--runs $HEADLINE_RUNS} ;;
    bisect)  # which GPU-only ingredient makes multi-GMI Ant non-finite (gpu_bisect.sh)
        step bisect "${BISECT_LIMIT:-560}" bash bench/gpu_bisect.sh "$out/bisect" \
            "$((${BISECT_LIMIT:-560} - 20))" ;;
    facts)
        step facts 120 bash -c "nvidia-smi; nvidia-smi -q | grep -iE 'MIG Mode|Compute Mode' -A1; \
$py -c 'import torch, jax, mujoco; print(\"torch\", torch.__version__, torch.version.cuda, \
torch.cuda.get_device_name(0)); print(\"jax\", jax.__version__, jax.devices()); \
print(\"mujoco\", mujoco.__version__)'; which nvidia-cuda-mps-control"
        ;;
    tests) step tests "${TESTS_LIMIT:-300}" "${pytest_gpu[@]}" --timeout 240 "${first_tests[@]}" ;;
    nan_test)  # the first GPU test alone, its train.py output kept under OUTDIR/nan_test/
        step nan_test "${TESTS_LIMIT:-300}" "${pytest_gpu[@]}" --timeout 280 \
            --basetemp "$out/nan_test" "${first_tests[0]}" ;;
    tests_more)
        step tests_more "${TESTS_LIMIT:-420}" "${pytest_gpu[@]}" --timeout 300 \
            $(printf -- '--deselect %s ' "${first_tests[@]}") tests ;;
    reduction) step reduction 600 "$py" bench/intra_gpu_reduction.py --epochs 15 --repeats 1 ;;
    mjx) step mjx 300 "$py" bench/env_throughput.py --tasks Ant Humanoid --rounds 1 --steps 10 ;;
    channels) step channels 300 "$py" bench/channel_transfer.py --device cuda --chunks 200 --repeats 2 ;;
    sweep)  # 4 Ant seeds with the task's settings, MPS-packed (4 a GPU) vs one at a time
        step sweep 590 "$py" bench/sweep_packing.py --gpu --per-gpu 4 --out "$out/sweep" \
            max_iterations="${SWEEP_EPOCHS:-100}" ;;
    plan)  # Algorithm 2 on the card (the paper's Table 10): GMIs per GPU and num_env for Ant
        step plan 580 "$py" -m isaacgymenvs_gmi.planner task=Ant num_envs=auto gmi.per_gpu=auto \
            gmi.plan.max_per_gpu=4 gmi.plan.max_envs=8192 gmi.plan.budget_s=540 \
            "gmi.plan.cache_dir=$out/plans" "--out=$out" ;;
    *) echo "unknown step $s" ;;
    esac
done
tar -czf "$out/results.tgz" bench/results
