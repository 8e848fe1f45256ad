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
