"""gpu-smoke's reference for the harness's cost per step: the fast example engine timed in-process,
no hub, agent, sandbox or harness (same method as harness/tests/gpu/decode_h200.py: the harness's
own prompts, 2 warm-ups, then the median TPOT of 5 samples, TPOT = (last step - first step) /
(steps - 1)).

    python3 scripts/gpu-smoke-inprocess.py MODEL_DIR FAST_ENGINE_DIR '[{"name","seed","batch","prompt","tokens"}]'

Prints one JSON line: {workload name: TPOT ms}.
"""
import json
import os
import statistics
import sys
import time

model, fast, workloads = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, fast)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness"))
import engine as fast_engine  # noqa: E402
from harness.decode.prompts import prompts  # noqa: E402

eng = fast_engine.Engine(model)
with open(os.path.join(model, "config.json")) as fh:
    vocab = min(json.load(fh)["vocab_size"], 151643)
out = {}
for wl in workloads:
    tpots = []
    for k in range(7):
        ids = prompts(wl["seed"], k, wl["batch"], wl["prompt"], vocab)
        stamps = [time.perf_counter_ns() for _ in eng.generate(ids, wl["tokens"])]
        if k >= 2:
            tpots.append((stamps[-1] - stamps[0]) / (len(stamps) - 1) / 1e6)
    out[wl["name"]] = statistics.median(tpots)
print(json.dumps(out), flush=True)
