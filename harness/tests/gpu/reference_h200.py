"""Scores against the reference engine on the H200 (harness/GPU_RESULTS.md, "Against the reference
engine"), through the real entry point (`python -m harness run`):

  calibrate   the eager baseline and harness/reference/qwen3 in pairs (mode calibration) until K's
              half-width is within the target or the budget is spent; K pooled as the hub pools it
              (libs: median of the pooled ratios, seeded bootstrap) and written to OUT/k.json
  fast N      examples/fast official against the reference with that K, N runs
  starter N   the unchanged starter (the eager baseline's code) official against the reference, N runs
  hidden      examples/fast official on the hidden workloads' shapes (256 new tokens), for the GPU cost

Usage: python3 reference_h200.py MODEL_DIR OUT_DIR STEP [N] ...   (steps run in the order given)
Environment: REF_PCT the definition's samples.referenceTokensPct (100: whole reference samples),
REF_NEW_TOKENS the public workloads' new tokens (32), REF_TAG a prefix of each run's event file,
REF_K a K file; where it names another GPU model than this one (or none is given), fast and starter
runs use a stand-in K of 7 with this machine's key (their cost and spread, not an absolute score)
GPU seconds: the run's wall time, all of which holds the GPU (loads, warm-ups, pairs, checks);
the candidate's timed seconds: the sum of its timed samples' totals."""
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODEL, OUT = sys.argv[1], sys.argv[2]
STEPS = sys.argv[3:]
BASE = f"{REPO}/starters/qwen3-4b-decode/engine"
FAST = f"{REPO}/starters/qwen3-4b-decode/examples/fast"
REFERENCE = f"{REPO}/harness/reference/qwen3"
NEW = int(os.environ.get("REF_NEW_TOKENS", "32"))
W32 = [
    {"name": "b1-p128", "batchSize": 1, "promptLength": 128, "maxNewTokens": NEW, "seed": 1},
    {"name": "b8-p512", "batchSize": 8, "promptLength": 512, "maxNewTokens": NEW, "seed": 2},
]
HIDDEN = [
    {"name": "h-b1-p256", "batchSize": 1, "promptLength": 256, "maxNewTokens": 256, "seed": 70001, "hidden": True},
    {"name": "h-b8-p512", "batchSize": 8, "promptLength": 512, "maxNewTokens": 256, "seed": 70002, "hidden": True},
    {"name": "h-b32-p256", "batchSize": 32, "promptLength": 256, "maxNewTokens": 128, "seed": 70003, "hidden": True},
]


sys.path.insert(0, f"{REPO}/harness")
from harness.decode.runner import hardware_key, hardware_name  # noqa: E402

HW = hardware_key(hardware_name())
TAG = os.environ.get("REF_TAG", "")


def standin(workloads):
    """A stand-in K of 7 for this machine's key: the cost and spread of runs, not their absolute score."""
    return {"hardware": HW, "halfWidthPct": 1.0, "pairs": 0, "runs": 0,
            "workloads": {w["name"]: {"k": 7.0, "low": 6.93, "high": 7.07} for w in workloads}}


def spec(mode, workloads, **over):
    s = {
        "kind": "decode", "benchmark": "qwen3-4b-decode", "mode": mode, "rulesVersion": 1,
        "model": {"family": "qwen3", "path": MODEL}, "baselineEngine": BASE, "referenceEngine": REFERENCE,
        "workloads": [dict(w, hidden=w.get("hidden", False) and mode == "official") for w in workloads],
        "samplesPerWorkload": 6, "maxPairs": int(os.environ.get("REF_MAX_PAIRS", "20")), "targetHalfWidthPct": 1.5, "warmupSamples": 4,
        "limits": {"loadSeconds": 300, "sampleSeconds": 60, "runSeconds": 900, "memoryBytes": 60e9},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 30, "logitTolerance": float(os.environ.get("REF_TOL", "0.25"))},
        "baseline": None, "calibration": None, "referenceTokensPct": float(os.environ.get("REF_PCT", "100")),
    }
    s.update(over)
    return s


def run(name, sp, submission):
    name = TAG + name
    path = f"/tmp/{name}.spec.json"
    json.dump(sp, open(path, "w"))
    r, w = os.pipe()
    t = time.time()
    p = subprocess.Popen([sys.executable, "-m", "harness", "run", "--benchmark", sp["benchmark"], "--submission", submission,
                          "--mode", sp["mode"], "--spec", path, "--events-fd", str(w)], cwd=REPO, pass_fds=(w,),
                         env=dict(os.environ, PYTHONPATH=f"{REPO}/harness"))
    os.close(w)
    # Written as they come, so a call cut short by its time limit still shows how far the run got.
    lines = []
    with os.fdopen(r) as src, open(f"{OUT}/{name}.events.jsonl", "w") as sink:
        for line in src:
            lines.append(line)
            sink.write(line)
            sink.flush()
    raw = "".join(lines)
    p.wait()
    wall = time.time() - t
    events = [json.loads(x) for x in raw.splitlines()]
    res = events[-1]
    timed = sum(e["totalMs"] for e in events if e["type"] == "sample" and not e["warmup"]) / 1000
    ratio = wall / timed if timed else None
    print(f"== {name}: {wall:.1f} s GPU, candidate timed {timed:.2f} s (ratio {ratio if ratio is None else round(ratio, 2)}), "
          f"{res['status']} {res['failureCode']} score={res['score']} interval={res.get('interval')} "
          f"absolute={res.get('absoluteInterval')} pairs={res.get('pairs')}: {res['message']}", flush=True)
    for e in events:
        if e["type"] == "check" or (e["type"] == "log" and (e["level"] != "info" or e["message"].startswith(("after ", "scoring", "candidate: Engine", "reference: Engine", "baseline: Engine"))
                                                             or "settled" in e["message"] or e["message"].startswith("GPU time"))):
            print("  ", json.dumps(e, ensure_ascii=False)[:600])
    for wl in res["workloads"]:
        print("   workload", json.dumps(wl))
    return {"name": name, "wall": wall, "timed": timed, "ratio": ratio, "status": res["status"], "failure": res["failureCode"],
            "score": res["score"], "interval": res.get("interval"), "absolute": res.get("absoluteInterval"), "pairs": res.get("pairs"),
            "calibration": res.get("calibration")}


def pool(runs):
    """K per workload as the hub pools it (libs calibration pooling): the median of every pair's ratio;
    95 % interval from a seeded percentile bootstrap of that median (between-run spread added with ≥ 2 runs)."""
    names = list(runs[0]["workloads"])
    out = {}
    logs = []
    for n in names:
        pooled = [x for r in runs for x in r["workloads"][n]["ratios"]]
        k = statistics.median(pooled)
        rng = random.Random(f"dryft-calibration:{n}")
        boots = sorted(statistics.median([pooled[rng.randrange(len(pooled))] for _ in pooled]) for _ in range(2000))
        lo, hi = boots[int(0.025 * 1999)], boots[int(0.975 * 1999)]
        h = max(math.log(k / lo), math.log(hi / k))
        if len(runs) >= 2:
            meds = [math.log(statistics.median(r["workloads"][n]["ratios"])) for r in runs]
            h = math.hypot(h, 1.96 * statistics.stdev(meds))
        out[n] = {"k": k, "low": k * math.exp(-h), "high": k * math.exp(h)}
        logs.append(h)
    half = 100 * math.expm1(sum(logs) / len(logs))
    return {"hardware": runs[0]["hardware"], "halfWidthPct": half, "pairs": sum(r["pairs"] for r in runs), "runs": len(runs), "workloads": out}


def summary(rows, label):
    ok = [r for r in rows if r["score"] is not None]
    if not ok:
        print(f"## {label}: no score", flush=True)
        return
    scores = [r["score"] for r in ok]
    med = statistics.median(scores)
    sd = statistics.stdev(scores) / statistics.mean(scores) * 100 if len(scores) > 1 else 0.0
    hold = sum(r["interval"]["low"] <= med <= r["interval"]["high"] for r in ok)
    hws = [r["interval"]["halfWidth"] / r["score"] * 100 for r in ok]
    print(f"## {label}: scores {[round(s, 2) for s in scores]}, median {med:.2f}, sd {sd:.2f} %, ranking intervals holding the median "
          f"{hold}/{len(ok)}, half-widths {[round(h, 2) for h in hws]} %, GPU ÷ timed {[round(r['ratio'], 2) for r in ok]}", flush=True)


os.makedirs(OUT, exist_ok=True)
print(os.popen("nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader").read().strip(), os.cpu_count(), flush=True)
kpath = f"{OUT}/k.json"
cal = json.load(open(os.environ["REF_K"])) if os.environ.get("REF_K") else None
i = 0
while i < len(STEPS):
    step = STEPS[i]
    n = int(STEPS[i + 1]) if i + 1 < len(STEPS) and STEPS[i + 1].isdigit() else 1
    i += 2 if i + 1 < len(STEPS) and STEPS[i + 1].isdigit() else 1
    if step == "calibrate":
        budget = float(os.environ.get("REF_CAL_BUDGET", "200"))
        got = [run(f"calibrate-{j}", spec("calibration", W32, calibrate={"targetHalfWidthPct": 1.0, "maxPairs": 200, "budgetSeconds": budget}),
                   "/nonexistent") for j in range(n)]
        done = [g["calibration"] for g in got if g["calibration"]]
        if done:
            cal = pool(done)
            json.dump(cal, open(kpath, "w"), indent=1)
            print("## K:", json.dumps(cal), flush=True)
    elif step in ("fast", "starter"):
        sub = FAST if step == "fast" else BASE
        k = cal if cal and cal["hardware"] == HW else standin(W32)
        rows = [run(f"{step}-{j}", spec("official", W32, calibration=k), sub) for j in range(n)]
        summary(rows, f"{step} official against the reference")
    elif step == "hidden":
        rows = [run(f"hidden-{j}", spec("official", HIDDEN, calibration=standin(HIDDEN)), FAST) for j in range(n)]
        summary(rows, "fast official on the hidden shapes (a stand-in K of 7: the cost, not the score)")
    else:
        raise SystemExit(f"unknown step {step}")
