"""Does the engine children's fixed PYTHONHASHSEED (or pinning them to one CPU set, arm "pinned":
DRYFT_ENGINE_CPUS=$PIN_CPUS) remove the per-run bias of paired scores?
(bench/SCORES.md, harness/GPU_RESULTS.md). Official paired runs through the real entry point,
interleaved: the harness as shipped (both children PYTHONHASHSEED=0) against the same harness with
per-process random seeds (ENGINE_HASH_SEED patched to "random"), for a given candidate.

Usage: python3 hash_seed_trial.py toy|qwen3 RUNS CANDIDATE [MODEL_DIR] [MAX_PAIRS]
  CANDIDATE: starter | fast   (toy: starters/toy-decode/..., qwen3: starters/qwen3-4b-decode/...)"""
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
family, runs, cand = sys.argv[1], int(sys.argv[2]), sys.argv[3]
model = sys.argv[4] if len(sys.argv) > 4 else None
max_pairs = int(sys.argv[5]) if len(sys.argv) > 5 else 24
star = "toy-decode" if family == "toy" else "qwen3-4b-decode"
ENGINES = {"starter": f"{REPO}/starters/{star}/engine", "fast": f"{REPO}/starters/{star}/examples/fast"}
SUB = ENGINES[cand]
# TRIAL_BASELINE=fast: the fast example against itself (its run-to-run spread without the eager
# baseline's jitter); default: the shipped baseline engine.
BASE = ENGINES[os.environ.get("TRIAL_BASELINE", "starter")]
if family == "toy":
    WL = [{"name": "h-wide", "batchSize": 8, "promptLength": 32, "maxNewTokens": 16, "seed": 9101},
          {"name": "h-deep", "batchSize": 2, "promptLength": 96, "maxNewTokens": 32, "seed": 9102}]
    extra = {"model": {"family": "toy", "path": f"{REPO}/models/toy/model.json"}, "warmupSamples": 1, "targetHalfWidthPct": 3,
             "limits": {"loadSeconds": 20, "sampleSeconds": 10, "runSeconds": 120, "memoryBytes": None, "memoryMeasure": "none"},
             "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 100, "logitTolerance": 0}}
else:
    WL = [{"name": "b1-p128", "batchSize": 1, "promptLength": 128, "maxNewTokens": 32, "seed": 1},
          {"name": "b8-p512", "batchSize": 8, "promptLength": 512, "maxNewTokens": 32, "seed": 2}]
    extra = {"model": {"family": "qwen3", "path": model}, "warmupSamples": 2, "targetHalfWidthPct": 1.5,
             "limits": {"loadSeconds": 300, "sampleSeconds": 60, "runSeconds": 400, "memoryBytes": 60e9},
             "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 1000, "logitTolerance": 0.25}}
SPEC = {"kind": "decode", "benchmark": star, "mode": "official", "rulesVersion": 1, "baselineEngine": BASE,
        "workloads": WL, "samplesPerWorkload": 5, "maxPairs": max_pairs, "baseline": None, **extra}
ARMS = os.environ.get("ARMS", "fixed,random").split(",")
PATCHES = {
    # per-process random hash seeds, as before the fix
    "random": "import harness.decode.engineproc as e; e.ENGINE_HASH_SEED = 'random'; ",
    # the fixed seed, and address-space randomisation off (personality is inherited by the children)
    "fixed-noaslr": "import ctypes; ctypes.CDLL(None).personality(0x0040000); ",
}


def one(arm: str) -> dict:
    path = f"/tmp/hst-{time.monotonic_ns()}.json"
    json.dump(SPEC, open(path, "w"))
    r, w = os.pipe()
    head = [sys.executable, "-m", "harness"] if arm in ("fixed", "pinned") else [sys.executable, "-c", PATCHES[arm] + (
        "import runpy, sys; sys.argv = ['harness'] + sys.argv[1:]; runpy.run_module('harness', run_name='__main__')")]
    p = subprocess.Popen(head + ["run", "--benchmark", star, "--submission", SUB, "--mode", "official", "--spec", path,
                                 "--events-fd", str(w)], cwd=REPO, pass_fds=(w,), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=f"{REPO}/harness",
                                                          **({"DRYFT_ENGINE_CPUS": os.environ.get("PIN_CPUS", "2-5")} if arm == "pinned" else {})))
    os.close(w)
    raw = os.fdopen(r, "rb").read().decode()
    err = p.communicate()[1].decode(errors="replace")
    events = [json.loads(x) for x in raw.splitlines()]
    res = events[-1]
    pos = {0: [], 1: []}
    raw_ms: dict = {}
    for e in events:
        if e["type"] == "log" and " sample " in e["message"] and "(pair" in e["message"]:
            role, wl = e["message"].split()[:2]
            raw_ms.setdefault(f"{role} {wl}", []).append(float(e["message"].split("total ")[1].split(" ms")[0]))
        m = e["type"] == "log" and re.match(r"pair (\d+) \S+: baseline/candidate = ([0-9.]+)", e["message"])
        if m:
            pos[int(m.group(1)) % 2].append(math.log(float(m.group(2))))
    iv = res.get("interval") or {}
    score = res.get("score") or res.get("metrics", {}).get("measuredScore")
    row = {"arm": arm, "score": score, "low": iv.get("low"), "high": iv.get("high"), "pairs": res.get("pairs"),
           "failure": res.get("failureCode"),
           "positionPct": round((statistics.mean(pos[0]) - statistics.mean(pos[1])) * 50, 2) if pos[0] and pos[1] else None}
    row["rawSpreadPct"] = {k: round((max(v) - min(v)) / statistics.median(v) * 100, 1) for k, v in raw_ms.items()}
    if score is None:
        row["error"] = err[-400:]
    print(json.dumps(row), flush=True)
    return row


def run_spread(arm: str) -> float:
    """The run-to-run spread beyond the pairs' own noise, in percent (harness/README.md, "Run-to-run
    spread"): the scores' variance less the mean squared bootstrap standard error."""
    got = [r for r in rows if r["arm"] == arm and r["score"] and r["low"] is not None]
    if len(got) < 2:
        return float("nan")
    med = statistics.median(r["score"] for r in got)
    var = statistics.variance([r["score"] / med * 100 for r in got])
    se2 = statistics.mean([((r["high"] - r["low"]) / 2 / r["score"] * 100 / 1.96) ** 2 for r in got])
    return math.sqrt(max(0.0, var - se2))


busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if os.environ.get("BUSY") == "1" else None
rows = []
try:
    for i in range(runs):
        for arm in ARMS:
            rows.append(one(arm))
finally:
    if busy:
        busy.kill()
for arm in ARMS:
    sc = [r["score"] for r in rows if r["arm"] == arm and r["score"]]
    if not sc:
        continue
    med = statistics.median(sc)
    cov = sum(1 for r in rows if r["arm"] == arm and r["low"] is not None and r["low"] <= 100 <= r["high"])
    within = sum(1 for s in sc if abs(s / med - 1) <= 0.05)
    print(f"== {family} {cand} {arm}: n={len(sc)} scores {min(sc):.1f}-{max(sc):.1f} median {med:.2f} "
          f"sd {statistics.pstdev(sc):.2f} ({statistics.pstdev(sc) / med * 100:.2f} %); interval holds 100 in {cov}; "
          f"sigma_run {run_spread(arm):.2f} %; "
          f"within ±5 % of median {within}; within 100±5 {sum(1 for s in sc if abs(s - 100) <= 5)}", flush=True)
