"""Where does the eager baseline's sample-to-sample TPOT spread come from? (GPU machine only)

  python3 baseline_jitter.py loop MODEL_DIR            # the baseline engine in a plain loop, no harness
  python3 baseline_jitter.py harness MODEL_DIR OUT     # baseline vs itself through the real entry point

Run each variant plain and under `taskset -c N` with OMP_NUM_THREADS=1 to see whether CPU
scheduling on the VM, rather than the harness, makes a launch-bound loop unsteady."""
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BASE = f"{REPO}/starters/qwen3-4b-decode/engine"
mode, model = sys.argv[1], sys.argv[2]
label = os.environ.get("VARIANT", "plain")


def spread(xs):
    return 100 * (max(xs) - min(xs)) / statistics.median(xs)


if mode == "loop":
    import torch

    spec = importlib.util.spec_from_file_location("baseline_engine", f"{BASE}/engine.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    engine = mod.Engine(model)
    g = torch.Generator().manual_seed(1)
    tpots = []
    for i in range(8):
        ids = torch.randint(0, 150000, (1, 128), generator=g).tolist()
        stamps = []
        t0 = time.perf_counter_ns()
        for _ in engine.generate(ids, 64):
            stamps.append(time.perf_counter_ns())
        tpot = (stamps[-1] - stamps[0]) / (len(stamps) - 1) / 1e6
        if i >= 2:
            tpots.append(tpot)
    print(f"== loop/{label}: TPOT ms {' '.join(f'{x:.2f}' for x in tpots)}; spread {spread(tpots):.1f}%; affinity {sorted(os.sched_getaffinity(0))[:4]}…", flush=True)
else:
    out = sys.argv[3]
    os.makedirs(out, exist_ok=True)
    sp = {
        "kind": "decode", "benchmark": "qwen3-4b-decode", "mode": "official", "rulesVersion": 1,
        "model": {"family": "qwen3", "path": model}, "baselineEngine": BASE,
        "workloads": [{"name": "b1-p128", "batchSize": 1, "promptLength": 128, "maxNewTokens": 64, "seed": 1}],
        "samplesPerWorkload": 5, "warmupSamples": 2,
        "limits": {"loadSeconds": 300, "sampleSeconds": 60, "runSeconds": 600, "memoryBytes": 60e9, "memoryMeasure": "auto"},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 1, "logitTolerance": 0.25},
        "baseline": None,
    }
    path = f"/tmp/jitter-{label}.spec.json"
    json.dump(sp, open(path, "w"))
    r, w = os.pipe()
    p = subprocess.Popen([sys.executable, "-m", "harness", "run", "--benchmark", sp["benchmark"], "--submission", BASE,
                          "--mode", "official", "--spec", path, "--events-fd", str(w)], cwd=REPO, pass_fds=(w,),
                         env=dict(os.environ, PYTHONPATH=f"{REPO}/harness"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(w)
    raw = os.fdopen(r).read()
    p.wait()
    open(f"{out}/{label}.events.jsonl", "w").write(raw)
    ev = [json.loads(x) for x in raw.splitlines()]
    res = ev[-1]
    base = [m["message"].split("TPOT ")[-1] for m in ev if m["type"] == "log" and m["message"].startswith("baseline b")]
    cand = [f"{e['tpotMs']:.2f}" for e in ev if e["type"] == "sample" and not e["warmup"]]
    print(f"== harness/{label}: {res['status']} {res['failureCode']} measured={res['metrics'].get('measuredScore')}; "
          f"baseline TPOT {' '.join(base)}; candidate TPOT {' '.join(cand)}; spread {[w['spreadPct'] for w in res['workloads']]}", flush=True)
