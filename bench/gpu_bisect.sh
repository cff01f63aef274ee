#!/usr/bin/env bash
# Which GPU-only ingredient makes multi-GMI training non-finite. Ant on MJX with MPS GMIs, a few
# epochs per run, each run changing one ingredient against the failing case (3 GMIs x 1366 envs,
# the task's own train settings). Per run it prints the exit code, the learner check's verdict
# (rl/finite_check.py stops a run at the first non-finite epoch, naming the tensors) and how many
# non-finite scalars rl-games handed TensorBoard (the earliest sign: NaN losses from epoch 1).
#
#   bash bench/gpu_bisect.sh OUTDIR [BUDGET_S]     (run through bench/gpu_suite.sh OUTDIR bisect)
#   BISECT_ONLY="name ..." runs only the variants named; BISECT_EPOCHS sets epochs per run (6)
#
# First a run that replays its first non-finite minibatch and says where the values went bad
# (gmi.debug.trace_nonfinite, rl/nonfinite_trace.py: its verdict and first non-finite module are
# copied into the summary line). Then the controls: the default (held hand-offs, sim/handoff.py)
# against the unheld hand-offs of before, one process at the failing size, the unheld case with
# every launch synchronous or with gmi.debug.sync (clean there: a stream or lifetime race), and
# the ingredients one at a time.
#
# Results: bench/results/gpu_h200/bisect/ (first window), bench/results/gpu_h100/bisect/ (the
# controls: not a race, not the hand-offs, not torch.compile; clean without mixed precision and
# in one process at the same size), bench/results/gpu_h100/cublaslt/ (the cause: cuBLASLt's
# fused-bias GEMM in MPS clients; three_cublaslt brings it back).
set -uo pipefail
out=${1:?usage: bench/gpu_bisect.sh OUTDIR [BUDGET_S]}
budget=${2:-540}
epochs=${BISECT_EPOCHS:-6}
py=${PYTHON:-python3}
mkdir -p "$out"
three="gmi.per_gpu=3 num_envs=1366 train.params.config.minibatch_size=10928"
bare="gmi.debug.handoffs=bare"  # torch/JAX buffers crossing unheld, as before sim/handoff.py
variants=(  # name|environment|overrides, most telling first
    "three_traced||$three gmi.debug.trace_nonfinite=true"
    "three_as_configured||$three"
    "three_cublaslt|DISABLE_ADDMM_CUDA_LT=0|$three"  # as before MPS clients kept addmm off it
    "three_bare_handoffs||$three $bare"
    "one_process_1366||gmi.per_gpu=1 num_envs=1366 train.params.config.minibatch_size=10928"
    "three_bare_launch_blocking|CUDA_LAUNCH_BLOCKING=1|$three $bare"
    "three_bare_debug_sync||$three $bare gmi.debug.sync=true"
    "three_uncapped||$three gmi.sm_percent=[100,100,100]"
    "three_no_compile||$three +train.params.config.torch_compile=False"
    "three_no_fp16||$three train.params.config.mixed_precision=False"
    "three_host_staged||$three gmi.intra_device=shm"
    "two_gmis_1366||gmi.per_gpu=2 num_envs=1366 train.params.config.minibatch_size=10928"
    "three_gmis_1024||gmi.per_gpu=3 num_envs=1024 train.params.config.minibatch_size=8192"
)
start=$SECONDS
for v in "${variants[@]}"; do
    IFS='|' read -r name environment overrides <<<"$v"
    if [[ -n ${BISECT_ONLY:-} && " $BISECT_ONLY " != *" $name "* ]]; then continue; fi
    left=$((budget - (SECONDS - start)))
    if ((left < 60)); then echo "$name: skipped, ${left}s left"; continue; fi
    limit=$((left < 150 ? left : 150))
    t0=$SECONDS
    # shellcheck disable=SC2086
    timeout -k 10 "$limit" env $environment "$py" train.py task=Ant $overrides "max_iterations=$epochs" \
        "train_dir=$out/runs" "experiment=$name" >"$out/$name.log" 2>&1
    rc=$?
    verdict=$(grep -o "non-finite values.*after epoch [0-9]*: [^.]*" "$out/$name.log" | head -1)
    nan_scalars=$(grep -c "NaN or Inf found in input tensor" "$out/$name.log")
    last=$(grep -o "epoch [0-9]*/[0-9]*.*" "$out/$name.log" | tail -1 | cut -c1-120)
    traced=$(grep -o "first non-finite output: .*\|verdict: .*" "$out/$name.log" | head -2 | tr '\n' ' ')
    echo "$name [${environment:+$environment }$overrides]: exit $rc after $((SECONDS - t0))s; ${verdict:-learner finite};" \
        "$nan_scalars non-finite scalars; last: ${last:-none}${traced:+; trace: $traced}"
done
