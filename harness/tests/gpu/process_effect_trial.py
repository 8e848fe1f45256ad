"""Is there a per-process speed (a layout chosen at the process's start and kept for its life)?
Starts K children of one engine in the jail, each as an official run's child (jail.spawn), and
times one workload round-robin: in every round each process runs one sample, in a rotating order,
so the machine's load and drift hit all alike. A process's effect = the median over rounds of its
log time minus that round's median over processes. Under no process effect these spread only by
sampling noise, estimated by the same statistic on the rounds split in halves (the two halves'
effects of one process disagree only by noise). Arms as in start_alike_trial.py.

Usage: BUSY=1 ARMS=old,both python3 process_effect_trial.py K ROUNDS starter|fast
Needs root and bubblewrap. CPU only (the toy model)."""
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, f"{REPO}/harness")
os.environ.update({"DRYFT_JAIL": "1", "DRYFT_JAIL_UID": "61300", "DRYFT_JAIL_MEMORY": str(4 << 30)})
from harness import jail  # noqa: E402
from harness.decode.engineproc import EngineProcess  # noqa: E402
from harness.decode.memory import make_measurer  # noqa: E402
from harness.decode.prompts import prompts  # noqa: E402

K, ROUNDS, cand = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
src = f"{REPO}/starters/toy-decode/engine" if cand == "starter" else f"{REPO}/starters/toy-decode/examples/fast"
MODEL = f"{REPO}/models/toy/model.json"
os.environ["DRYFT_JAIL_READ"] = MODEL  # visible in the jail even under /tmp
W = {"batchSize": 8, "promptLength": 32, "maxNewTokens": 16, "seed": 9101}
ARMS = os.environ.get("ARMS", "old,samepath,noaslr,both").split(",")
SETTINGS = {"old": (None, False), "samepath": ("/run/engine", False), "noaslr": (None, True), "both": ("/run/engine", True)}
# Folders of different path lengths, as the baseline's engine folder and the hub's workspace differ.
DIRS = []
for k in range(K):
    d = f"/tmp/dryft-pe/{'x' * (3 * k + 1)}/engine"
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    DIRS.append(d)
os.chmod("/tmp/dryft-pe", 0o755)


def effects(times):  # times[round][k] -> per-process median of log-time minus round median
    rel = [[math.log(t) - statistics.median(math.log(x) for x in row) for t in row] for row in times]
    return [statistics.median(r[k] for r in rel) * 100 for k in range(K)]


def arm_once(arm):
    jail.ENGINE_WORKDIR, jail.ENGINE_NO_ASLR = SETTINGS[arm]
    procs = [EngineProcess(d, "baseline", make_measurer("none"), None) for d in DIRS]
    times = []
    try:
        for p in procs:
            p.start()
            p.load(MODEL, time.perf_counter_ns() + 30_000_000_000, "30 s")
        for r in range(1 + ROUNDS):
            row = [0.0] * K
            ids = prompts(W["seed"], r, W["batchSize"], W["promptLength"], 256)
            for j in range(K):
                k = (j + r) % K
                s = procs[k].generate(ids, W["maxNewTokens"], 1 << 30, time.perf_counter_ns() + 30_000_000_000, "30 s")
                row[k] = s.total_ns
            if r:  # the first round warms up
                times.append(row)
    finally:
        for p in procs:
            p.close()
    eff = effects(times)
    halves = [effects(times[0::2]), effects(times[1::2])]
    noise = statistics.pstdev([a - b for a, b in zip(*halves)]) / 2  # sd of one effect from noise alone
    print(f"{arm}: process effects % {[round(e, 2) for e in eff]} spread {max(eff) - min(eff):.2f} % sd {statistics.pstdev(eff):.2f} "
          f"(noise alone ~{noise:.2f}) load {os.getloadavg()[0]:.1f}", flush=True)
    return statistics.pstdev(eff), noise


busy = subprocess.Popen(["node", "-e", "for(;;){}"]) if os.environ.get("BUSY") == "1" else None
out = {a: [] for a in ARMS}
try:
    for rep in range(int(os.environ.get("REPS", "3"))):
        for arm in ARMS:
            out[arm].append(arm_once(arm))
finally:
    if busy:
        busy.kill()
for arm in ARMS:
    print(f"== {cand} {arm}: between-process sd % {[round(a, 2) for a, _ in out[arm]]}, noise-only sd % {[round(b, 2) for _, b in out[arm]]}")
