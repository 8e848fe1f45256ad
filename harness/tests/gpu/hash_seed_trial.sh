#!/bin/bash
# One device call: bash harness/tests/gpu/hash_seed_trial.sh (harness/GPU_RESULTS.md, "Fixed hash seed")
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader; nproc
T=harness/tests/gpu/hash_seed_trial.py
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b || exit 1
# call 1: fixed vs random hash seeds; call 2 (ARMS=fixed,pinned): unpinned vs pinned to one CPU set
if [ "${ARMS:-fixed,random}" = "fixed,random" ]; then
  { timeout 100 python3 $T toy 8 starter; timeout 80 python3 $T toy 8 fast; } 2>&1 | tee "$OUT/toy.log"
fi
timeout ${QWEN_TIMEOUT:-380} python3 $T qwen3 ${QWEN_RUNS:-1} starter /tmp/q4b ${QWEN_PAIRS:-10} 2>&1 | tee "$OUT/qwen3.log"
