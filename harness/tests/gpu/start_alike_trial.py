"""Do the engine children start alike, and does it remove the per-run bias of paired scores?
(harness/README.md, "The same conditions for both children"; bench/SCORES.md). Official toy runs
through the real entry point, in the jail (DRYFT_JAIL=1, as the agent runs it, with the agent's
small environment), the candidate copied to a workspace path of another length than the
baseline's engine folder (the hub's /dryft/workspace), arms interleaved run by run:

  old       each child at its own folder's path (cwd, HOME, --submission), its own random layout
  samepath  every child's workspace at jail.ENGINE_WORKDIR, random layout
  noaslr    own paths, address-space randomisation off (jail.ENGINE_NO_ASLR)
  both      both (as shipped)

Usage: BUSY=1 ARMS=old,both python3 start_alike_trial.py RUNS starter|fast [MAX_PAIRS]
Needs root and bubblewrap. CPU only (the toy model)."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
runs, cand = int(sys.argv[1]), sys.argv[2]
max_pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 24
BASE = f"{REPO}/starters/toy-decode/engine"
SUB = "/tmp/dryft-trial/dryft/workspace"
shutil.rmtree(SUB, ignore_errors=True)
shutil.copytree(BASE if cand == "starter" else f"{REPO}/starters/toy-decode/examples/fast", SUB)
os.chmod("/tmp/dryft-trial", 0o755)
WL = [{"name": "h-wide", "batchSize": 8, "promptLength": 32, "maxNewTokens": 16, "seed": 9101},
      {"name": "h-deep", "batchSize": 2, "promptLength": 96, "maxNewTokens": 32, "seed": 9102}]
SPEC = {"kind": "decode", "benchmark": "toy-decode", "mode": "official", "rulesVersion": 1, "baselineEngine": BASE,
        "workloads": WL, "samplesPerWorkload": 5, "maxPairs": max_pairs, "baseline": None,
        "model": {"family": "toy", "path": f"{REPO}/models/toy/model.json"}, "warmupSamples": 1, "targetHalfWidthPct": 3,
        "limits": {"loadSeconds": 20, "sampleSeconds": 10, "runSeconds": 120, "memoryBytes": None, "memoryMeasure": "none"},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 100, "logitTolerance": 0}}
ARMS = os.environ.get("ARMS", "old,samepath,noaslr,both").split(",")
PATCHES = {
    "old": "jail.ENGINE_WORKDIR = None; jail.ENGINE_NO_ASLR = False",
    "samepath": "jail.ENGINE_NO_ASLR = False",
    "noaslr": "jail.ENGINE_WORKDIR = None",
    "both": "pass",
}
# The agent's environment for the harness (apps/gpu-agent/src/harness-command.ts), sandboxed.
ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
       "LANG": "C.UTF-8", "PYTHONPATH": f"{REPO}/harness", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
       "TERM": "dumb", "DRYFT_JAIL": "1", "DRYFT_JAIL_UID": "61200", "DRYFT_JAIL_NPROC": "512",
       "DRYFT_JAIL_NOFILE": "1024", "DRYFT_JAIL_MEMORY": str(4 << 30), "DRYFT_JAIL_WORKSPACE_BYTES": str(256 << 20),
       "USER": "dryft", "LOGNAME": "dryft"}


def one(arm: str) -> dict:
    path = f"/tmp/sat-{time.monotonic_ns()}.json"
    json.dump(SPEC, open(path, "w"))
    r, w = os.pipe()
    code = ("from harness import jail; " + PATCHES[arm] + "; import runpy, sys; sys.argv = ['harness'] + sys.argv[1:]; "
            "runpy.run_module('harness', run_name='__main__')")
    p = subprocess.Popen([sys.executable, "-c", code, "run", "--benchmark", "toy-decode", "--submission", SUB,
                          "--mode", "official", "--spec", path, "--events-fd", str(w)],
                         cwd=SUB, pass_fds=(w,), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    os.close(w)
    raw = os.fdopen(r, "rb").read().decode()
    err = p.communicate()[1].decode(errors="replace")
    os.unlink(path)
    res = [json.loads(x) for x in raw.splitlines()][-1]
    iv = res.get("interval") or {}
    score = res.get("score") or res.get("metrics", {}).get("measuredScore")
    row = {"arm": arm, "score": score, "low": iv.get("low"), "high": iv.get("high"), "pairs": res.get("pairs"),
           "failure": res.get("failureCode"), "load": round(os.getloadavg()[0], 1)}
    if score is None:
        row["error"] = (res.get("message") or "") + err[-400:]
    print(json.dumps(row), flush=True)
    return row


busy = subprocess.Popen(["node", "-e", "for(;;){}"]) if os.environ.get("BUSY") == "1" else None
rows = []
try:
    for i in range(runs):
        for arm in ARMS:
            rows.append(one(arm))
finally:
    if busy:
        busy.kill()
for arm in ARMS:
    mine = [r for r in rows if r["arm"] == arm and r["score"]]
    sc = [r["score"] for r in mine]
    if not sc:
        continue
    med = statistics.median(sc)
    cov = sum(1 for r in mine if r["low"] is not None and r["low"] <= 100 <= r["high"])
    within = sum(1 for s in sc if abs(s / med - 1) <= 0.05)
    loads = [r["load"] for r in mine]
    print(f"== toy {cand} {arm}: n={len(sc)} scores {min(sc):.1f}-{max(sc):.1f} median {med:.2f} "
          f"sd {statistics.pstdev(sc):.2f} ({statistics.pstdev(sc) / med * 100:.2f} %); interval holds 100 in {cov}; "
          f"within ±5 % of median {within}; within 100±5 {sum(1 for s in sc if abs(s - 100) <= 5)}; "
          f"load {min(loads)}-{max(loads)}", flush=True)
