#!/usr/bin/env bash
# One device call (2026-12-07): the reference's shorter clock (samples.referenceTokensPct 50) against
# whole reference samples (100), side by side on one machine, through the real entry point.
#   bash harness/tests/gpu/reference_clock_call.sh OUT_DIR
# Order: hidden shapes at 50 and 100 (GPU ÷ the candidate's timed seconds), the fast example official
# five times at 50 on the public workloads' 128 new tokens (sd, ranking intervals), the hidden shapes
# at 50 again, then the fast example twice at 100 for the spread side by side. Raw logs and events go to OUT_DIR.
set -u
OUT=${1:?OUT_DIR}
mkdir -p "$OUT/events"
export PYTHONUNBUFFERED=1 REF_TOL=0.4
G=harness/tests/gpu
python3 $G/build_qwen3_4b.py /tmp/q4b
step() { # PCT NEW TAG STEPS...
  local pct=$1 new=$2 tag=$3; shift 3
  REF_PCT=$pct REF_NEW_TOKENS=$new REF_TAG=$tag python3 $G/reference_h200.py /tmp/q4b "$OUT/events" "$@"
}
step 50 128 p50a- hidden 1
step 100 128 p100a- hidden 1
if [ -n "${CALL_SHORT:-}" ]; then  # little device time left: the first comparison and three fast runs
  step 50 128 p50f- fast 3
  exit 0
fi
step 50 128 p50f- fast 5
step 50 128 p50b- hidden 1
step 100 128 p100f- fast 2
