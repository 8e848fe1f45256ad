#!/usr/bin/env bash
# One device call: the sample through the real entry point on the proposed easy-square spec
# (60 s), on the hard spec scaled to 60 s (timeScale 1/60), and the CPU-offload cheat with spec
# device cuda. Usage (repo root): bash harness/harness/training/gpu_check.sh OUTDIR
set -u
OUT=${1:-/tmp/dr-gpu}
mkdir -p "$OUT/cheat"
export PYTHONPATH=harness PYTHONUNBUFFERED=1
SPECS=starters/deep-recurrence/specs
python3 -c 'import torch;print("torch",torch.__version__,torch.cuda.get_device_name(0))'
sed 's/"timeScale": 1,/"timeScale": 0.016666666666666666,/' $SPECS/hard.json > "$OUT/hard60.json"
sed 's/"timeScale": 1,/"timeScale": 0.25,/' $SPECS/easy-square.json > "$OUT/cheat.json"
run() {  # name spec submission_dir
  local start=$(date +%s.%N)
  python3 -m harness run --benchmark deep-recurrence --submission "$3" --mode "$(python3 -c "import json;print(json.load(open('$2'))['mode'])")" \
    --spec "$2" --events-fd 3 3>"$OUT/$1_events.jsonl" >"$OUT/$1_stdout.txt" 2>&1
  echo "== $1 wall $(python3 -c "print(round($(date +%s.%N)-$start,2))") s; metric events $(grep -c '"type":"metric"' "$OUT/$1_events.jsonl")"
  grep '"type":"metric"' "$OUT/$1_events.jsonl" | head -n 1
  tail -n 1 "$OUT/$1_events.jsonl"
}
run easy_square $SPECS/easy-square.json starters/deep-recurrence
run hard60 "$OUT/hard60.json" starters/deep-recurrence
{ cat harness/tests/training_corpus/base.py; echo; cat harness/tests/training_corpus/cheat_offload.py; } > "$OUT/cheat/submission.py"
run offload "$OUT/cheat.json" "$OUT/cheat"
