#!/bin/bash
# One device call for the paired-measurement GPU results: bash harness/tests/gpu/paired_h200.sh
set -o pipefail
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
nproc
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b || exit 1
timeout 420 python3 harness/tests/gpu/paired_h200.py /tmp/q4b "$OUT/paired" 2>&1 | tee "$OUT/paired.log"
