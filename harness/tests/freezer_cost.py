"""What one sample switch of the freezer costs (freeze + verify + both CPU readings + thaw), measured
on real idle engine-like processes: `cd harness && python3 tests/freezer_cost.py [ITERATIONS]`.

Not a test (pytest does not collect it): it prints median and p99 per case, for harness/README.md.
Cases: an idle process of one thread (the toy engines between samples), and one of 32 threads with
two child processes (roughly a torch engine: its intra-op pool and helpers); each with SIGSTOP and,
where the harness can make one here, with the cgroup v2 freezer."""
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from harness.decode import freezer  # noqa: E402
from harness.decode.engineproc import EngineProcess  # noqa: E402
from harness.decode.memory import Measurer  # noqa: E402

IDLE = r"""
import os, sys, threading, time
threads, children = int(sys.argv[1]), int(sys.argv[2])
for _ in range(children):
    if os.fork() == 0:
        while True:
            time.sleep(3600)
ev = threading.Event()
for _ in range(threads - 1):
    threading.Thread(target=ev.wait, daemon=True).start()
sys.stdin.read()  # idle, like an engine waiting for its next command
"""


def case(threads: int, children: int, method: str, n: int) -> tuple[float, float, float]:
    ep = EngineProcess("/tmp", "candidate", Measurer(), None)
    ep.proc = subprocess.Popen([sys.executable, "-c", IDLE, str(threads), str(children)], stdin=subprocess.PIPE,
                               start_new_session=True)
    fz = freezer.Freezer(lambda *a, **k: None, method=method, gpu=freezer.GpuIdle(present=False))
    fz.attach(ep)
    time.sleep(0.5)
    try:
        for _ in range(n):
            with fz.hold([ep]):
                pass
    finally:
        ep.thaw()
        ep.proc.stdin.close()
        ep.close()
    xs = sorted(ns / 1e6 for ns in fz.switch_ns)
    return statistics.median(xs), xs[min(len(xs) - 1, int(0.99 * len(xs)))], xs[-1]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.machine())
    print(f"{os.cpu_count()} CPUs ({cpu}), load average {os.getloadavg()[0]:.1f}, {n} switches per case")
    methods = ["signal"] + (["cgroup"] if freezer.cgroup_problem() is None else [])
    for threads, children in ((1, 0), (32, 2)):
        for method in methods:
            med, p99, worst = case(threads, children, method, n)
            print(f"{threads:>2} thread(s), {children} child process(es), {method:>6}: median {med:.3f} ms, p99 {p99:.3f} ms, max {worst:.3f} ms")


if __name__ == "__main__":
    main()
