#!/bin/bash
# One device call: the run-to-run spread of official paired scores on the H200 (harness/GPU_RESULTS.md,
# "Run-to-run spread"): the fast example against itself, several official runs, then the baseline engine
# against itself once with the definition's pair cap; ASLR off for the children, as the jail does. bash harness/tests/gpu/run_spread_h200.sh
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; nproc; command -v bwrap || echo "no bwrap: children unjailed"
T=harness/tests/gpu/hash_seed_trial.py
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b || exit 1
TRIAL_BASELINE=fast ARMS=fixed-noaslr timeout ${FAST_TIMEOUT:-300} python3 $T qwen3 ${FAST_RUNS:-5} fast /tmp/q4b 12 2>&1 | tee "$OUT/fast_vs_fast.log"
ARMS=fixed-noaslr timeout ${BASE_TIMEOUT:-200} python3 $T qwen3 1 starter /tmp/q4b 20 2>&1 | tee "$OUT/base_vs_base.log"
