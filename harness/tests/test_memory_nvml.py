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


def _nvml_with(procs, used):
    m = _fake_pynvml(1, {0})
    m.nvmlDeviceGetMemoryInfo = lambda h: _Mem(used[0])
    m.nvmlDeviceGetComputeRunningProcesses = lambda h: procs
    return m


def test_pids_in_this_namespace_are_counted_per_process(monkeypatch):
    # The driver reports pids as this process sees them (measured on the H200): only the child's count,
    # never the trusted engine's or the checker's memory loaded beside it.
    used = [1_000]
    procs = [_Proc(101, 9_000), _Proc(202, 8_000), _Proc(303, 7_000)]
    monkeypatch.setitem(sys.modules, "pynvml", _nvml_with(procs, used))
    monkeypatch.setattr(memory, "group_pids", lambda pgid: [303, 304])
    m = memory.NvmlMeasurer()
    m.begin()
    used[0] = 25_000
    assert m.measure(303) == 7_000
    assert m.describe() == "gpu (NVML)"


def test_pids_that_match_nothing_fall_back_to_the_device_and_say_so(monkeypatch):
    # Host pids seen from a pid namespace: the delta since the child started, which also counts what the
    # trusted side loaded after that moment; the memory check names it an upper bound.
    used = [1_000]
    procs = [_Proc(90101, 9_000), _Proc(90202, 8_000), _Proc(90303, 7_000)]
    monkeypatch.setitem(sys.modules, "pynvml", _nvml_with(procs, used))
    monkeypatch.setattr(memory, "group_pids", lambda pgid: [3, 4])
    m = memory.NvmlMeasurer()
    m.begin()
    assert m.describe() == "gpu (NVML)"
    used[0] = 25_000
    assert m.measure(3) == 24_000
    assert m.describe().startswith("gpu (NVML), device-wide: NVML's pids matched none of the engine's")
    assert m.describe().endswith("an upper bound")
