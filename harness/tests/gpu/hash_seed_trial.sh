#!/bin/bash
# One device call: bash harness/tests/gpu/hash_seed_trial.sh (harness/GPU_RESULTS.md, "Fixed hash seed")
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader; nproc
T=harness/tests/gpu/hash_seed_trial.py
{ timeout 100 python3 $T toy 8 starter; timeout 80 python3 $T toy 8 fast; } 2>&1 | tee "$OUT/toy.log"
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b || exit 1
timeout 380 python3 $T qwen3 1 starter /tmp/q4b 10 2>&1 | tee "$OUT/qwen3.log"
