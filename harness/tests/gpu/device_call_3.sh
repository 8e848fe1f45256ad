#!/bin/bash
# Third device call: the training GPU check, then where the eager baseline's jitter comes from.
export PYTHONUNBUFFERED=1 PYTHONPATH=harness
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nproc; uptime
timeout 200 bash harness/harness/training/gpu_check.sh "$OUT/training" 2>&1 | tail -n 12
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b 2>&1 | grep built || exit 1
J=harness/tests/gpu/baseline_jitter.py
timeout 60 python3 $J loop /tmp/q4b 2>&1 | grep "=="
VARIANT=pinned OMP_NUM_THREADS=1 timeout 60 taskset -c 3 python3 $J loop /tmp/q4b 2>&1 | grep "=="
VARIANT=pinned2 OMP_NUM_THREADS=1 timeout 60 taskset -c 5,6 python3 $J loop /tmp/q4b 2>&1 | grep "=="
timeout 120 python3 $J harness /tmp/q4b "$OUT/jitter" 2>&1 | grep "=="
VARIANT=pinned OMP_NUM_THREADS=1 timeout 120 taskset -c 4-7 python3 $J harness /tmp/q4b "$OUT/jitter" 2>&1 | grep "=="
nvidia-smi --query-gpu=clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv
