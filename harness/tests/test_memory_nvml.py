"""The NVML memory measurer inside the agent's sandbox, where only the slot's GPU node exists."""
import sys
import types

import pytest

from harness.decode import memory


class _Mem:
    def __init__(self, used):
        self.used = used


def _fake_pynvml(count, openable, used=1000):
    m = types.ModuleType("pynvml")

    class NVMLError(Exception):
        pass

    m.NVMLError = NVMLError
    m.nvmlInit = lambda: None
    m.nvmlDeviceGetCount = lambda: count

    def handle(i):
        if i not in openable:
            raise NVMLError("Insufficient Permissions")  # no /dev/nvidiaN for this GPU here
        return i

    m.nvmlDeviceGetHandleByIndex = handle
    m.nvmlDeviceGetMemoryInfo = lambda h: _Mem(used * (h + 1))
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: []
    m.nvmlDeviceGetGraphicsRunningProcesses = lambda h: []
    return m


def test_nvml_keeps_the_gpus_it_can_open(monkeypatch):
    # A two-GPU box, slot 1: NVML counts both, but only GPU 1's node is in the sandbox.
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(2, {1}))
    m = memory.NvmlMeasurer()
    assert m.handles == [1]
    m.begin()
    assert m.base_used == 2000


def test_nvml_with_no_openable_gpu_is_not_used(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", _fake_pynvml(2, set()))
    with pytest.raises(RuntimeError):
        memory.NvmlMeasurer()


class _Proc:
    def __init__(self, pid, used):
        self.pid, self.usedGpuMemory = pid, used


def _measurer(monkeypatch, nvml_pids, child_pids):
    """An NVML measurer over one GPU holding three processes (9000, 8000 and 7000 bytes under the
    given pids), the child being child_pids; `used` is the device's used memory, 1000 at begin()."""
    used = [1_000]
    procs = [_Proc(pid, mem) for pid, mem in zip(nvml_pids, (9_000, 8_000, 7_000))]
    m = _fake_pynvml(1, {0})
    m.nvmlDeviceGetMemoryInfo = lambda h: _Mem(used[0])
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: procs
    monkeypatch.setitem(sys.modules, "pynvml", m)
    monkeypatch.setattr(memory, "group_pids", lambda pgid: child_pids)
    measurer = memory.NvmlMeasurer()
    measurer.begin()
    return measurer, used


def test_pids_in_this_namespace_are_counted_per_process(monkeypatch):
    # The driver reports pids as this process sees them (measured on the H200): only the child's count,
    # never the trusted engine's or the checker's memory loaded beside it.
    m, used = _measurer(monkeypatch, (101, 202, 303), [303, 304])
    used[0] = 25_000
    assert m.measure(303) == 7_000
    assert m.describe() == "gpu (NVML)"


def test_pids_that_match_nothing_fall_back_to_the_device_and_say_so(monkeypatch):
    # Host pids seen from a pid namespace: the delta since the child started, which also counts what the
    # trusted side loaded after that moment; the memory check names it an upper bound.
    m, used = _measurer(monkeypatch, (90101, 90202, 90303), [3, 4])
    assert m.describe() == "gpu (NVML)"
    used[0] = 25_000
    assert m.measure(3) == 24_000
    assert m.describe().startswith("gpu (NVML), device-wide: NVML's pids matched none of the engine's")
    assert m.describe().endswith("an upper bound")
