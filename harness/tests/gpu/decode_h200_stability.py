"""Second decode GPU call: the baseline engine against itself, official, one workload, after the
harness stopped polling NVML every 50 ms and started collecting garbage between samples.
A: memory measured through NVML (as in production); B: memory not measured (memoryMeasure none).
Usage: python3 decode_h200_stability.py MODEL_DIR OUT_DIR"""
import json
import os
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODEL, OUT = sys.argv[1], sys.argv[2]
BASE = os.environ.get("DECODE_BASELINE", f"{REPO}/starters/qwen3-4b-decode/engine")
os.makedirs(OUT, exist_ok=True)
for name, measure in (("A-nvml", "auto"), ("B-no-memory-polling", "none")):
    sp = {
        "kind": "decode", "benchmark": "qwen3-4b-decode", "mode": "official", "rulesVersion": 1,
        "model": {"family": "qwen3", "path": MODEL}, "baselineEngine": BASE,
        "workloads": [{"name": "b1-p128", "batchSize": 1, "promptLength": 128, "maxNewTokens": 64, "seed": 1}],
        "samplesPerWorkload": 5, "warmupSamples": 1,
        "limits": {"loadSeconds": 300, "sampleSeconds": 60, "runSeconds": 600, "memoryBytes": 60e9, "memoryMeasure": measure},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 1, "logitTolerance": 0.25},
        "baseline": None,
    }
    path = f"/tmp/{name}.spec.json"
    json.dump(sp, open(path, "w"))
    r, w = os.pipe()
    t = time.time()
    p = subprocess.Popen([sys.executable, "-m", "harness", "run", "--benchmark", sp["benchmark"], "--submission", BASE,
                          "--mode", "official", "--spec", path, "--events-fd", str(w)], cwd=REPO, pass_fds=(w,),
                         env=dict(os.environ, PYTHONPATH=f"{REPO}/harness"))
    os.close(w)
    raw = os.fdopen(r).read()
    p.wait()
    open(f"{OUT}/{name}.events.jsonl", "w").write(raw)
    ev = [json.loads(x) for x in raw.splitlines()]
    res = ev[-1]
    base = [e["message"] for e in ev if e["type"] == "log" and e["message"].startswith("baseline b")]
    cand = [f"{'w' if e['warmup'] else ''}{e['index']}:{e['tpotMs']:.2f}" for e in ev if e["type"] == "sample"]
    print(f"== {name}: {time.time() - t:.0f} s {res['status']} {res['failureCode']} score={res['score']} {res['message']}")
    print("   baseline TPOTs:", " | ".join(m.split("TPOT ")[-1] for m in base))
    print("   candidate TPOTs:", " ".join(cand))
    print("   workloads", json.dumps(res["workloads"]))
    print("   metrics", json.dumps(res["metrics"]), flush=True)
