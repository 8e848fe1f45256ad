"""Whether GPM (NVML's GPU Performance Monitoring, Hopper and later) can tell a frozen engine's queued
GPU work in a few milliseconds, where a utilisation sample takes one 200 ms period
(harness/GPU_RESULTS.md, "The freezer's GPU wait"). Standalone (pynvml and torch only).

Usage on a GPU machine: python3 freezer_gpm_probe.py
1. Support: nvmlGpmQueryDeviceSupport per device.
2. Idle device: SM and DRAM-bandwidth utilisation over windows of 2, 5, 10 and 20 ms.
3. A child running work: big matmuls, tiny kernels (a decode step's size), and device-to-device
   copies: the windows' readings while it runs.
4. A child queues N matmuls (or copies) without synchronising and is SIGSTOPped: how long until a
   window of W ms reads 0 on both, against the drain time.

Found on the lent H200 VM (GPU_RESULTS.md, "A quicker idle wait through GPM?"): short windows read 0 %
while the device is busy (the counters move about every 100 ms) and DRAM bandwidth reads NaN, so the
waits of part 4 never end there; the freezer does not use GPM."""
import os
import signal
import statistics
import subprocess
import sys
import time

import pynvml as N

N.nvmlInit()
H = [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]
print("devices", len(H), [N.nvmlDeviceGetName(h) for h in H], flush=True)
for h in H:
    try:
        print("gpm support", N.nvmlGpmQueryDeviceSupport(h).isSupportedDevice, flush=True)
    except Exception as e:  # noqa: BLE001
        print("gpm support query failed", type(e).__name__, e, flush=True)
        sys.exit(0)
SM, DRAM = N.NVML_GPM_METRIC_SM_UTIL, N.NVML_GPM_METRIC_DRAM_BW_UTIL
h = H[0]


def sample():
    s = N.nvmlGpmSampleAlloc()
    N.nvmlGpmSampleGet(h, s)
    return s


def metrics(a, b):
    g = N.c_nvmlGpmMetricsGet_t()
    g.version = N.NVML_GPM_METRICS_GET_VERSION
    g.numMetrics = 2
    g.sample1, g.sample2 = a, b
    g.metrics[0].metricId, g.metrics[1].metricId = SM, DRAM
    N.nvmlGpmMetricsGet(g)
    return g.metrics[0].value, g.metrics[1].value


def windows(w_ms, n=20):
    out = []
    a = sample()
    for _ in range(n):
        time.sleep(w_ms / 1000)
        b = sample()
        out.append(metrics(a, b))
        N.nvmlGpmSampleFree(a)
        a = b
    N.nvmlGpmSampleFree(a)
    return out


def fmt(vals):
    sm = [v[0] for v in vals]
    dr = [v[1] for v in vals]
    return "sm min %.3f med %.3f max %.3f | dram min %.3f med %.3f max %.3f | zero-both %d/%d" % (
        min(sm), statistics.median(sm), max(sm), min(dr), statistics.median(dr), max(dr),
        sum(1 for s, d in vals if s == 0 and d == 0), len(vals))


t = time.perf_counter(); s0 = sample(); cost_get = time.perf_counter() - t
t = time.perf_counter(); s1 = sample(); metrics(s0, s1); cost_pair = time.perf_counter() - t
print("cost: sample %.3f ms, sample+metrics %.3f ms" % (cost_get * 1e3, cost_pair * 1e3), flush=True)
for w in (2, 5, 10, 20):
    print("idle window %d ms:" % w, fmt(windows(w)), flush=True)

RUNNER = """import sys,time,torch
kind=sys.argv[1]
if kind=='big': a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)
elif kind=='tiny': a=torch.randn(1,2560,device='cuda',dtype=torch.bfloat16); w=torch.randn(2560,2560,device='cuda',dtype=torch.bfloat16)
else: a=torch.empty(256<<20,dtype=torch.uint8,device='cuda'); b=torch.empty_like(a)
torch.cuda.synchronize(); print('go',flush=True)
end=time.time()+4
while time.time()<end:
  if kind=='big': c=a@a
  elif kind=='tiny': c=a@w
  else: b.copy_(a)
  if kind!='big': torch.cuda.synchronize()
torch.cuda.synchronize()"""
for kind in ("big", "tiny", "copy"):
    p = subprocess.Popen([sys.executable, "-c", RUNNER, kind], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    time.sleep(0.5)
    for w in (2, 5, 10):
        print("running %s, window %d ms:" % (kind, w), fmt(windows(w, 10)), flush=True)
    p.wait()

QUEUE = """import sys,time,torch
kind,n=sys.argv[1],int(sys.argv[2])
if kind=='mm': a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16)
else: a=torch.empty(1<<30,dtype=torch.uint8,device='cuda'); b=torch.empty_like(a)
torch.cuda.synchronize(); s=torch.cuda.Stream()
with torch.cuda.stream(s):
  for _ in range(n):
    if kind=='mm': c=a@a
    else: b.copy_(a)
print('q',flush=True);time.sleep(999)"""


def wait_gpm(w_ms, timeout=10):
    start = time.monotonic()
    a = sample()
    while True:
        time.sleep(w_ms / 1000)
        b = sample()
        sm, dr = metrics(a, b)
        N.nvmlGpmSampleFree(a)
        a = b
        if sm == 0 and dr == 0:
            N.nvmlGpmSampleFree(a)
            return True, time.monotonic() - start
        if time.monotonic() - start > timeout:
            N.nvmlGpmSampleFree(a)
            return False, time.monotonic() - start


for w in (5, 10):
    ws = sorted(wait_gpm(w)[1] * 1e3 for _ in range(20))
    print("gpm idle wait (window %d ms): median %.1f p99 %.1f ms" % (w, statistics.median(ws), ws[-1]), flush=True)
for kind, n in (("mm", 200), ("mm", 1000), ("copy", 20), ("copy", 200)):
    p = subprocess.Popen([sys.executable, "-c", QUEUE, kind, str(n)], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    os.kill(p.pid, signal.SIGSTOP)
    while open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()[0] != "T":
        pass
    t0 = time.monotonic()
    ok, s = wait_gpm(5)
    print("%s x%d queued, frozen: gpm idle %d after %.0f ms" % (kind, n, int(ok), s * 1e3), flush=True)
    p.kill()
    p.wait()
