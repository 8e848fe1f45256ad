"""Peak memory of the engine process, measured from outside it by the parent.

The child's own reports are worthless (it can lie), so the parent polls:
- gpu:  NVML through pynvml (per-process used memory of every process in the child's process
        group); if pynvml is missing, `nvidia-smi --query-compute-apps` (slower polls). The driver
        reports the pids in the caller's pid namespace: on the H200 (driver 580.159.04) the fast
        example's official peak read the same 11,796,480,000 bytes per process run plainly, in a
        pid namespace of its own (as the agent's sandbox is), and there with the engine jail's
        nested namespaces (harness/GPU_RESULTS.md, "Whose GPU memory", 2026-12-04). Where a
        driver reports pids that match none of the child's (host pids seen from a namespace), the
        fallback is the device's used memory minus what was in use before the child started: the
        devices NVML sees are only the slot's (the agent binds only its /dev/nvidiaN nodes), but
        the trusted engine and the parent's checker load beside the candidate after that moment,
        so the delta is an upper bound that counts them too. A run measured that way says so in its
        memory check (`describe`), so a verdict near the limit can be read for what it is.
- rss:  resident memory of the child's process group from /proc (CPU benchmarks and tests).
- none: not applicable (no GPU, or the spec does not ask): reported as such, never as a pass.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from typing import Callable, Optional

from ..jail import family


def group_pids(pgid: int) -> list[int]:
    """Processes of the child: its process group and every descendant (the engine may start
    helpers; in the jail the child is a descendant of the bubblewrap process the parent started,
    in a pid namespace of its own, and can leave the group but never the tree)."""
    return family(pgid)


class Measurer:
    name = "none"
    applicable = False

    def begin(self) -> None:
        """Called just before the child starts."""

    def measure(self, pgid: int) -> Optional[int]:
        return None

    def describe(self) -> str:
        """How the peak was measured, for the memory check's line (read once the run is over)."""
        return self.name


class RssMeasurer(Measurer):
    name = "rss"
    applicable = True

    def measure(self, pgid: int) -> Optional[int]:
        total = 0
        hwm = 0
        for pid in group_pids(pgid):
            try:
                with open(f"/proc/{pid}/status") as fh:
                    for line in fh:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1]) * 1024
                        elif line.startswith("VmHWM:"):
                            # kernel-kept peak of the largest process (the engine's main one)
                            hwm = max(hwm, int(line.split()[1]) * 1024)
            except OSError:
                continue
        return max(total, hwm)


class NvmlMeasurer(Measurer):
    name = "gpu (NVML)"
    applicable = True
    # NVML's per-process query enters the driver; polled every 50 ms it made a launch-bound eager
    # engine's step time wander on the H200 VM. The parent also polls at every sample's end, and
    # PyTorch's caching allocator keeps its peak reserved, so 0.5 s loses little.
    interval = 0.5

    def __init__(self) -> None:
        import pynvml  # noqa: F401 - raises ImportError when absent

        self.nvml = pynvml
        pynvml.nvmlInit()
        # In the agent's sandbox only the slot's /dev/nvidiaN nodes exist, yet NVML may still count
        # every GPU of the box: keep the ones this process can open (the slot's), skip the rest.
        self.handles = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            try:
                self.handles.append(pynvml.nvmlDeviceGetHandleByIndex(i))
            except pynvml.NVMLError:
                continue
        if not self.handles:
            raise RuntimeError("NVML can open no GPU here")
        self.base_used = 0
        self.device_wide = False  # set once a reading had to fall back on the device's used memory

    def _used(self) -> int:
        return sum(self.nvml.nvmlDeviceGetMemoryInfo(h).used for h in self.handles)

    def begin(self) -> None:
        self.base_used = self._used()

    def measure(self, pgid: int) -> Optional[int]:
        procs = []
        for h in self.handles:
            for fn in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
                try:
                    procs.extend(getattr(self.nvml, fn)(h))
                except Exception:
                    pass
        group = set(group_pids(pgid))
        mine = [p.usedGpuMemory or 0 for p in procs if p.pid in group]
        if mine:
            return sum(mine)
        if procs and not any(p.pid == os.getpid() for p in procs):
            # pids from another namespace: fall back to the device-wide delta
            self.device_wide = True
            return max(0, self._used() - self.base_used)
        return 0

    def describe(self) -> str:
        if not self.device_wide:
            return self.name
        return (f"{self.name}, device-wide: NVML's pids matched none of the engine's, so the GPU's used memory since the "
                "candidate started, which counts the trusted engine and the checker loaded beside it: an upper bound")


class NvidiaSmiMeasurer(Measurer):
    name = "gpu (nvidia-smi)"
    applicable = True
    interval = 0.25

    def __init__(self) -> None:
        self.exe = shutil.which("nvidia-smi")
        if not self.exe:
            raise FileNotFoundError("nvidia-smi")
        self._query()

    def _query(self) -> list[tuple[int, int]]:
        out = subprocess.run(
            [self.exe, "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
        rows = []
        for line in out.splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 2 and parts[0].isdigit() and parts[1].isdigit():
                rows.append((int(parts[0]), int(parts[1]) * 1024 * 1024))
        return rows

    def measure(self, pgid: int) -> Optional[int]:
        group = set(group_pids(pgid))
        return sum(mem for pid, mem in self._query() if pid in group)


def _gpu_present() -> bool:
    return any(os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidiactl")) or bool(shutil.which("nvidia-smi"))


def make_measurer(kind: str) -> Measurer:
    """kind: 'auto' | 'gpu' | 'rss' | 'none' (spec.limits.memoryMeasure)."""
    if kind == "rss":
        return RssMeasurer()
    if kind == "none":
        return Measurer()
    if kind in ("auto", "gpu"):
        if _gpu_present():
            for cls in (NvmlMeasurer, NvidiaSmiMeasurer):
                try:
                    return cls()
                except Exception:
                    continue
        return Measurer()
    raise ValueError(f"unknown memory measure {kind!r}")


class Monitor:
    """Polls the measurer in a thread for the child's whole life and keeps the peak. Over the
    limit it kills the child's process group at once (the main loop then sees the channel close
    and reports memory_limit)."""

    def __init__(self, measurer: Measurer, pgid: int, limit: Optional[int], kill: Callable[[], None]) -> None:
        self.measurer = measurer
        self.pgid = pgid
        self.limit = limit
        self.kill = kill
        self.peak: Optional[int] = None
        self.exceeded = False
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the main thread polls too, at every sample's end
        self._thread: Optional[threading.Thread] = None
        self.interval = getattr(measurer, "interval", 0.05)

    def start(self) -> None:
        if not self.measurer.applicable:
            return
        self._thread = threading.Thread(target=self._loop, name="memory-monitor", daemon=True)
        self._thread.start()

    def poll(self) -> None:
        try:
            value = self.measurer.measure(self.pgid)
        except Exception:
            value = None
        if value is None:
            return
        with self._lock:
            if self.peak is None or value > self.peak:
                self.peak = value
            over = self.limit is not None and value > self.limit and not self.exceeded
            if over:
                self.exceeded = True
        if over:
            self.kill()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.poll()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
