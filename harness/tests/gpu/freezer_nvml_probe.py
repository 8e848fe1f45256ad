"""What NVML shows of GPU work a frozen engine left queued, and what the freezer's wait before a
trusted engine's sample costs (harness/README.md, "The idle engine is frozen"; harness/GPU_RESULTS.md,
"The freezer's GPU wait"). Standalone (pynvml and torch only), the same rule as
`freezer.GpuIdle.wait_idle`: wait until the newest utilisation sample taken after the freeze reads 0 %.

Usage on a GPU machine: python3 freezer_nvml_probe.py
1. 40 waits on an idle device: the cost every trusted engine's sample pays.
2. A child queues N bf16 8192x8192 matmuls on its own stream without synchronising, says "q" and
   sleeps; the parent SIGSTOPs it, waits until /proc reads it stopped, and waits for the device."""
import os
import signal
import statistics
import subprocess
import sys
import time

import pynvml as N

N.nvmlInit()
HANDLES = [N.nvmlDeviceGetHandleByIndex(i) for i in range(N.nvmlDeviceGetCount())]


def busy(since):
    worst = 0
    for h in HANDLES:
        try:
            _, samples = N.nvmlDeviceGetSamples(h, N.NVML_GPU_UTILIZATION_SAMPLES, since)
            fresh = [x for x in samples if x.timeStamp > since]
            if not fresh:
                return None
            value = max(fresh, key=lambda x: x.timeStamp).sampleValue.uiVal
        except N.NVMLError as e:
            if e.value == N.NVML_ERROR_NOT_FOUND:
                return None
            value = N.nvmlDeviceGetUtilizationRates(h).gpu
        worst = max(worst, value)
    return worst


def wait(timeout=5):
    start, since = time.monotonic(), time.time_ns() // 1000
    while True:
        if busy(since) == 0:
            return True, time.monotonic() - start
        if time.monotonic() - start > timeout:
            return False, time.monotonic() - start
        time.sleep(0.005)


CHILD = """import sys,time,torch
a=torch.randn(8192,8192,device='cuda',dtype=torch.bfloat16);torch.cuda.synchronize();s=torch.cuda.Stream()
with torch.cuda.stream(s):
 for _ in range(int(sys.argv[1])):c=a@a
print('q',flush=True);time.sleep(999)"""

waits = sorted(wait()[1] * 1e3 for _ in range(40))
print("idle wait ms median %.1f p99 %.1f" % (statistics.median(waits), waits[-1]))
for queued in (200, 1000, 3000, 6000):
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(queued)], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    os.kill(p.pid, signal.SIGSTOP)
    while open("/proc/%d/stat" % p.pid).read().rsplit(")", 1)[1].split()[0] != "T":
        pass
    ok, s = wait()
    print(queued, "queued, frozen: idle", int(ok), "after ms %.0f" % (s * 1e3))
    p.kill()
    p.wait()
