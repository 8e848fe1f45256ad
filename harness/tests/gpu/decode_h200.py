"""The decode GPU measurement (harness/GPU_RESULTS.md): real harness runs on a Qwen3-4B-shaped
random-weight checkpoint. Usage: python3 decode_h200.py MODEL_DIR OUT_DIR"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODEL, OUT = sys.argv[1], sys.argv[2]
BASE = os.environ.get("DECODE_BASELINE", f"{REPO}/starters/qwen3-4b-decode/engine")  # override: CPU dry run only
FAST = f"{REPO}/starters/qwen3-4b-decode/examples/fast"
WORKLOADS = [
    {"name": "b1-p128", "batchSize": 1, "promptLength": 128, "maxNewTokens": 64, "seed": 1},
    {"name": "b8-p512", "batchSize": 8, "promptLength": 512, "maxNewTokens": 64, "seed": 2},
    {"name": "b32-p256", "batchSize": 32, "promptLength": 256, "maxNewTokens": 64, "seed": 3},
]


def spec(mode, baseline=None, workloads=WORKLOADS):
    return {
        "kind": "decode", "benchmark": "qwen3-4b-decode", "mode": mode, "rulesVersion": 1,
        "model": {"family": "qwen3", "path": MODEL}, "baselineEngine": BASE, "workloads": workloads,
        "samplesPerWorkload": 5, "warmupSamples": 2,
        "limits": {"loadSeconds": 300, "sampleSeconds": 60, "runSeconds": 1200, "memoryBytes": 60e9},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 5, "logitTolerance": 0.25},
        "baseline": baseline,
    }


def run(name, sp, submission):
    path = f"/tmp/{name}.spec.json"
    json.dump(sp, open(path, "w"))
    r, w = os.pipe()
    t = time.time()
    p = subprocess.Popen([sys.executable, "-m", "harness", "run", "--benchmark", sp["benchmark"], "--submission", submission,
                          "--mode", sp["mode"], "--spec", path, "--events-fd", str(w)], cwd=REPO, pass_fds=(w,),
                         env=dict(os.environ, PYTHONPATH=f"{REPO}/harness"))
    os.close(w)
    raw = os.fdopen(r).read()
    p.wait()
    open(f"{OUT}/{name}.events.jsonl", "w").write(raw)
    events = [json.loads(x) for x in raw.splitlines()]
    res = events[-1]
    print(f"== {name}: {time.time() - t:.0f} s, {res['status']} {res['failureCode']} score={res['score']}: {res['message']}", flush=True)
    for e in events:
        if e["type"] in ("check", "baseline") or (e["type"] == "log" and e["level"] != "info"):
            print("  ", json.dumps(e)[:400])
    for wl in res["workloads"]:
        print("   workload", json.dumps(wl))
    print("   metrics", json.dumps(res["metrics"]))
    if res.get("detail"):
        print("   detail", res["detail"][:1500])
    return events


os.makedirs(OUT, exist_ok=True)
# 1. the baseline engine against itself: harness measures the baseline first (spec.baseline null)
ev1 = run("1-baseline-official", spec("official"), BASE)
base = next((e for e in ev1 if e["type"] == "baseline"), None)
cached = {"hardware": base["hardware"], "workloads": base["workloads"]} if base else None
# 2. the fast example against the baseline figures of run 1 (as the hub's cache would supply them)
ev2 = run("2-fast-official", spec("official", cached), FAST)
# 3. one perturbed logit
pert = "/tmp/dryft-perturbed"
shutil.rmtree(pert, ignore_errors=True)
os.makedirs(pert)
for f in os.listdir(FAST):
    if f.endswith(".py"):
        shutil.copy(f"{FAST}/{f}", f"{pert}/{'base.py' if f == 'engine.py' else f}")
shutil.copy(f"{REPO}/harness/tests/engines/qwen3_perturbed.py", f"{pert}/engine.py")
run("3-perturbed-public", spec("public", cached, WORKLOADS[1:2]), pert)

# 4. the harness's own cost: the fast engine timed in-process (no harness) vs through the harness
sys.path.insert(0, FAST)
sys.path.insert(0, f"{REPO}/harness")
import engine as fast_engine  # noqa: E402
from harness.decode.prompts import prompts  # noqa: E402

eng = fast_engine.Engine(MODEL)
vocab = min(json.load(open(f"{MODEL}/config.json"))["vocab_size"], 151643)
res2 = ev2[-1]
for wl in WORKLOADS:
    tpots = []
    for k in range(7):
        ids = prompts(wl["seed"], k, wl["batchSize"], wl["promptLength"], vocab)
        stamps = []
        for _ in eng.generate(ids, wl["maxNewTokens"]):
            stamps.append(time.perf_counter_ns())
        if k >= 2:
            tpots.append((stamps[-1] - stamps[0]) / (len(stamps) - 1) / 1e6)
    direct = statistics.median(tpots)
    via = next(w["tpotMs"] for w in res2["workloads"] if w["workload"] == wl["name"])
    print(f"== overhead {wl['name']}: in-process TPOT {direct:.4f} ms, through harness {via:.4f} ms, "
          f"difference {(via - direct) * 1000:.1f} us/step = {(via - direct) / direct * 100:.2f}% "
          f"(parent {res2['metrics'].get('harnessParentUsPerStep', 0):.2f} us, child {res2['metrics'].get('harnessChildUsPerStep', 0):.2f} us per step)", flush=True)
