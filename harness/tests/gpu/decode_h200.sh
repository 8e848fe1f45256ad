#!/bin/bash
# The one device call for the decode GPU results: bash harness/tests/gpu/decode_h200.sh
set -o pipefail
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
python3 -c "import torch, transformers, pynvml; print('torch', torch.__version__, 'transformers', transformers.__version__)"
python3 harness/tests/gpu/build_qwen3_4b.py /tmp/q4b || exit 1
python3 harness/tests/gpu/decode_h200.py /tmp/q4b "${OUT:-/tmp/out}/decode" 2>&1 | tee "${OUT:-/tmp/out}/decode.log"
