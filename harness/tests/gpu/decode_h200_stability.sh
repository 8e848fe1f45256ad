#!/bin/bash
# Second device call for the decode GPU results: bash harness/tests/gpu/decode_h200_stability.sh
export PYTHONUNBUFFERED=1
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b 2>&1 | grep built || exit 1
timeout 170 python3 harness/tests/gpu/decode_h200_stability.py /tmp/q4b "${OUT:-/tmp/out}/stability" 2>&1 | grep -v "Loading weights"
