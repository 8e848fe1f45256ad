"""Paired official runs on the H200 (harness/GPU_RESULTS.md, "Paired measurement"): through the real
entry point, (A) the baseline engine against itself, (B) examples/fast against itself (the fast
engine as the spec's baselineEngine too), (C) examples/fast against the baseline.
Usage: python3 paired_h200.py MODEL_DIR OUT_DIR"""
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
MODEL, OUT = sys.argv[1], sys.argv[2]
BASE = os.environ.get("DECODE_BASELINE", f"{REPO}/starters/qwen3-4b-decode/engine")
FAST = f"{REPO}/starters/qwen3-4b-decode/examples/fast"
NEW = int(os.environ.get("PAIRED_NEW_TOKENS", "32"))
WORKLOADS = [
    {"name": "b1-p128", "batchSize": 1, "promptLength": 128, "maxNewTokens": NEW, "seed": 1},
    {"name": "b8-p512", "batchSize": 8, "promptLength": 512, "maxNewTokens": NEW, "seed": 2},
]


def spec(baseline_engine, max_pairs, run_seconds):
    return {
        "kind": "decode", "benchmark": "qwen3-4b-decode", "mode": "official", "rulesVersion": 1,
        "model": {"family": "qwen3", "path": MODEL}, "baselineEngine": baseline_engine, "workloads": WORKLOADS,
        "samplesPerWorkload": 5, "maxPairs": max_pairs, "targetHalfWidthPct": 1.5, "warmupSamples": 2,
        "limits": {"loadSeconds": 300, "sampleSeconds": 60, "runSeconds": run_seconds, "memoryBytes": 60e9},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 30, "logitTolerance": 0.25},
        "baseline": None,
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
    wall = time.time() - t
    print(f"== {name}: {wall:.0f} s, {res['status']} {res['failureCode']} score={res['score']} "
          f"interval={res.get('interval')} pairs={res.get('pairs')}: {res['message']}", flush=True)
    for e in events:
        if e["type"] == "check" or (e["type"] == "log" and (e["level"] != "info" or e["message"].startswith("after "))):
            print("  ", json.dumps(e)[:400])
    for wl in res["workloads"]:
        print("   workload", json.dumps(wl))
    # the raw spread of each engine's own samples (what pairing has to cancel)
    per = {}
    for e in events:
        if e["type"] == "log" and " sample " in e["message"] and "(pair" in e["message"]:
            role, wl = e["message"].split()[:2]
            total = float(e["message"].split("total ")[1].split(" ms")[0])
            per.setdefault((role, wl), []).append(total)
    raw_spread = {f"{role} {wl}": round((max(v) - min(v)) / statistics.median(v) * 100, 1) for (role, wl), v in per.items()}
    print("   raw total-time spread (max-min)/median %:", json.dumps(raw_spread), flush=True)
    # a failed run has no result.interval: its last "after N pairs" log line has the interval
    last = [e["message"] for e in events if e["type"] == "log" and e["message"].startswith("after ")]
    return {"name": name, "lastRound": last[-1] if last else None, "wall": wall, "status": res["status"], "failure": res["failureCode"], "score": res["score"],
            "measured": res["metrics"].get("measuredScore"), "interval": res.get("interval"), "pairs": res.get("pairs"),
            "ratioSpread": [w.get("ratioSpreadPct") for w in res["workloads"]], "rawSpread": raw_spread}


def fmt_iv(iv):
    return f"{iv['low']:.2f}–{iv['high']:.2f}" if iv else "—"


os.makedirs(OUT, exist_ok=True)
rows = [
    run("A-baseline-vs-itself", spec(BASE, 8, 110), BASE),
    run("B-fast-vs-itself", spec(FAST, 12, 70), FAST),
    run("C-fast-vs-baseline", spec(BASE, 8, 110), FAST),
]
json.dump(rows, open(f"{OUT}/paired.json", "w"), indent=1)
print("\n| run | status | score | 95 % interval | ± | pairs | ratio IQR/median % | wall s |")
for r in rows:
    iv = r["interval"]
    print(f"| {r['name']} | {r['status']} {r['failure'] or ''} | {r['score'] if r['score'] is not None else r['measured']} | "
          f"{fmt_iv(iv)} | "
          f"{iv['halfWidth'] if iv else '—'} | {r['pairs']} | {r['ratioSpread']} | {r['wall']:.0f} |")
for r in rows:
    print(f"{r['name']}: {r['lastRound']}; raw spread {r['rawSpread']}")
