"""The freezer (harness/harness/decode/freezer.py) on real processes: an engine-like child whose
processes fork, setsid and spin is stopped completely (every thread of every member in state T, no
CPU time gained) and resumed; the refusals when it cannot be frozen; the CPU accounting catching
work done while "idle"; the same in the jail (DRYFT_JAIL=1, as the agent runs it) and under the
cgroup v2 freezer where the harness can make one. The whole-run cases (a sabotage engine through an
official toy-decode run) are in test_idle_burner.py."""
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import HARNESS  # noqa: F401 (puts the harness on sys.path)
from harness import jail
from harness.decode import freezer
from harness.decode.engineproc import EngineProcess
from harness.decode.failures import HarnessFailure, IdleEngineFailure
from harness.decode.memory import Measurer

# An engine-like child: the main process spins in a thread and in itself; it forks a child that
# setsid()s (its own session and process group) and spins, which forks a grandchild that spins; and
# (with orphan) a double fork whose process is re-parented away from the tree. Each says "up" on fd W
# once it spins.
SPINNER = r"""
import os, sys, threading
w = int(sys.argv[1]); orphan = sys.argv[2] == "1"
def spin():
    x = 0
    while True:
        x += 1
def up():
    os.write(w, b"u")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        up(); spin()
    up(); spin()
if orphan and os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        up(); spin()
    os._exit(0)
threading.Thread(target=spin, daemon=True).start()
up(); spin()
"""


def _bwrap_problem():
    if os.geteuid() != 0:
        return "the jail's own-uid sandbox needs the harness to run as root"
    if not os.path.exists("/usr/bin/bwrap"):
        return "bubblewrap is not installed (apt-get install bubblewrap)"
    r = subprocess.run(["/usr/bin/bwrap", "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc",
                        "--dev", "/dev", "--as-pid-1", "true"], capture_output=True, text=True)
    return None if r.returncode == 0 else f"bubblewrap cannot create namespaces here: {r.stderr.strip()}"


JAIL_PROBLEM = _bwrap_problem()
CGROUP_PROBLEM = freezer.cgroup_problem()
if os.environ.get("CI") == "true" and JAIL_PROBLEM:
    raise RuntimeError(f"CI must run the freezer in the jail: {JAIL_PROBLEM}")
needs_jail = pytest.mark.skipif(JAIL_PROBLEM is not None, reason=f"SKIPPED LOUDLY: {JAIL_PROBLEM}")
needs_cgroup = pytest.mark.skipif(CGROUP_PROBLEM is not None, reason=f"SKIPPED LOUDLY: no cgroup freezer here: {CGROUP_PROBLEM}")


class Engine:
    """A spinner started the way engineproc starts engine children (jail.spawn: its own session;
    in the jail its own pid namespace), held by a real EngineProcess."""

    def __init__(self, tmp_path, role="candidate", orphan=False, jailed=False, method="signal", log=None,
                 attach_after=0.0):
        self.log = log if log is not None else []
        r, w = os.pipe()
        (tmp_path / "work").mkdir(exist_ok=True)
        self.ep = EngineProcess(str(tmp_path / "work"), role, Measurer(), None)
        expected = 4 if orphan else 3
        self.freezer = freezer.Freezer(lambda text, level="info": self.log.append(text), method=method,
                                       gpu=freezer.GpuIdle(present=False))
        cgroup = self.freezer.prepare(role)  # as the runner does: the child is born in it
        try:
            self.ep.proc, _ = jail.spawn([sys.executable, "-c", SPINNER, str(w), "1" if orphan else "0"],
                                         cwd=str(tmp_path / "work"), env=dict(os.environ), pass_fds=(w,),
                                         role=role, memory_limit=None, cgroup=cgroup.path if cgroup else None)
        finally:
            os.close(w)
        try:
            time.sleep(attach_after)  # a busy machine: the engine runs (and forks) before the harness attaches
            self.freezer.attach(self.ep, cgroup)
            got = b""
            deadline = time.monotonic() + 30
            while len(got) < expected and time.monotonic() < deadline:
                got += os.read(r, 16)
        except BaseException:
            self.close()
            raise
        finally:
            os.close(r)
        assert len(got) == expected, f"only {len(got)} of {expected} spinners came up"
        self.processes = expected + (1 if jailed else 0)  # the jail adds bubblewrap itself

    def close(self):
        self.ep.thaw()
        self.ep.close()


@pytest.fixture
def engines(tmp_path):
    made = []

    def make(**kw):
        sub = tmp_path / f"e{len(made)}"
        sub.mkdir()
        e = Engine(sub, **kw)
        made.append(e)
        return e

    yield make
    for e in made:
        e.close()


def states(pids):
    return {pid: freezer.task_states(pid) for pid in pids}


def assert_frozen_then_resumed(e):
    members = e.ep.freeze()
    try:
        assert len(members) >= e.processes, (members, e.processes)
        threads = sum(len(s) for s in states(members).values())
        assert threads >= e.processes + 1  # the spinning thread too
        if e.ep.family.cgroup is None:
            # SIGSTOP: every thread of every member reads T (or Z: the double fork's exited middle)
            assert all(s in "TtZ" for per in states(members).values() for s in per.values()), states(members)
        else:
            live = {p for p, per in states(members).items() if any(s != "Z" for s in per.values())}
            assert e.ep.family.cgroup.frozen() and live <= e.ep.family.cgroup.procs()
        before = e.ep.family.usage()
        cpu0 = e.ep.cpu_ns()
        time.sleep(0.5)
        after = e.ep.family.usage()
        assert after.members == before.members
        assert freezer.worked_ns(before, after) == 0, freezer.worked_ns(before, after)
        assert e.ep.cpu_ns() == cpu0
    finally:
        e.ep.thaw()
    # resumed: the spinners work again (how fast depends on how busy this shared machine is)
    cpu0 = e.ep.cpu_ns()
    deadline = time.monotonic() + 5
    while e.ep.cpu_ns() - cpu0 < 20_000_000 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert e.ep.cpu_ns() - cpu0 >= 20_000_000
    pids = set(e.ep.family.members()) | (e.ep.family.cgroup.procs() if e.ep.family.cgroup else set())
    assert all(s not in "Tt" for per in states(pids).values() for s in per.values())
    assert sum(s in "RS" for per in states(pids).values() for s in per.values()) >= e.processes + 1


def test_a_forking_setsid_spinning_engine_is_stopped_completely_and_resumed(engines):
    assert_frozen_then_resumed(engines())


@needs_jail
def test_in_the_jail_every_process_of_its_pid_namespace_is_stopped_and_resumed(engines, monkeypatch):
    monkeypatch.setenv("DRYFT_JAIL", "1")
    monkeypatch.setenv("DRYFT_JAIL_UID", "61100")
    e = engines(orphan=True, jailed=True)  # the double-forked orphan is re-parented to the jail's pid 1
    assert_frozen_then_resumed(e)


@needs_cgroup
def test_the_cgroup_freezer_holds_even_an_orphan_outside_the_tree(engines):
    # the harness attaches only once the engine has double-forked (CI's busy box did this by chance
    # and read 3 of the 4 in the cgroup: the child was moved in after it had forked); born in its
    # cgroup, the double-forked orphan, in no walk of the tree, is in it whenever the harness looks
    e = engines(orphan=True, method="cgroup", attach_after=1.0)
    assert e.ep.family.cgroup is not None
    assert len(e.ep.family.cgroup.procs()) == 4
    assert_frozen_then_resumed(e)
    # the cgroup's own reading covers the orphan: frozen, it gains nothing
    e.ep.freeze()
    u0 = e.ep.family.cgroup.usage_ns()
    time.sleep(0.3)
    assert e.ep.family.cgroup.usage_ns() == u0
    e.ep.thaw()


@needs_cgroup
def test_the_engines_cgroup_is_removed_with_it(engines):
    e = engines(method="cgroup")
    path = e.ep.family.cgroup.path
    assert os.path.isdir(path)
    e.close()
    assert not os.path.exists(path)


def test_close_kills_every_process_even_those_that_left_the_group(engines):
    e = engines()  # no jail, no cgroup: a setsid'd child is re-parented away once the root is gone
    e.ep.freeze()
    e.ep.thaw()
    seen = dict(e.ep._seen)
    assert len(seen) >= 3  # the root, the setsid'd child and its child
    e.close()
    time.sleep(0.2)
    alive = {pid for pid, start in seen.items() if freezer.task_states(pid) and
             freezer.task_states(pid).get(pid) not in ("Z", "X")}
    assert not alive, alive


def test_hold_freezes_the_idle_engine_for_the_body_and_logs_the_method_once(engines):
    e = engines()
    for _ in range(3):
        with e.freezer.hold([e.ep]):
            assert all(s in "Tt" for per in states(e.ep.family.members()).values() for s in per.values())
            time.sleep(0.05)
        assert not e.ep.family.frozen
    assert [t for t in e.log if t.startswith("freezer:")] == [e.log[0]]
    assert "SIGSTOP of every process of the idle engine, verified by /proc state" in e.log[0]
    assert len(e.freezer.switch_ns) == 3 and all(ns > 0 for ns in e.freezer.switch_ns)


def frozen_now(ep):
    return all(s in "Tt" for per in states(ep.family.members()).values() for s in per.values())


def test_a_kept_engine_stays_frozen_between_holds_until_it_runs_again(engines, monkeypatch):
    e, other = engines(), engines(role="reference")
    freezes = []
    real = freezer.Family.freeze
    monkeypatch.setattr(freezer.Family, "freeze", lambda self, timeout=5.0: freezes.append(self.root) or real(self, timeout))
    for _ in range(2):  # two samples of the other engine in a row, the parent's checks between them
        with e.freezer.hold([e.ep], stay=True):
            assert frozen_now(e.ep)
        assert e.ep.family.frozen and frozen_now(e.ep)
    assert freezes == [e.ep.family.root]  # frozen and verified once for both
    with e.freezer.hold([other.ep], stay=True):  # now it runs: thawed first
        assert not e.ep.family.frozen and other.ep.family.frozen
    e.freezer.release()
    assert not other.ep.family.frozen and not e.freezer.kept


def test_work_done_between_two_kept_holds_is_caught(engines):
    e = engines()
    with e.freezer.hold([e.ep], stay=True):
        pass
    # something resumes it behind the freezer's back (a SIGCONT it could not send itself) and stops it again
    for pid in e.ep.family.stopped:
        os.kill(pid, signal.SIGCONT)
    time.sleep(0.3)
    for pid in e.ep.family.stopped:
        os.kill(pid, signal.SIGSTOP)
    time.sleep(0.05)
    with pytest.raises(IdleEngineFailure) as info:
        with e.freezer.hold([e.ep], stay=True):
            pass
    assert "ms of CPU time during a" in info.value.message
    assert not e.ep.family.frozen and not e.freezer.kept  # thawed on the failure


def test_one_gpu_wait_serves_the_trusted_samples_while_the_candidate_stays_frozen(engines, monkeypatch):
    e, ref = engines(), engines(role="reference")
    e.freezer.gpu = gpu_with([0])
    waits = []
    real = e.freezer.gpu.wait_idle
    monkeypatch.setattr(e.freezer.gpu, "wait_idle", lambda timeout=None: waits.append(1) or real(timeout))
    with e.freezer.hold([e.ep], timed=False, stay=True):  # the reference's warm-up: untimed, no wait
        pass
    assert waits == []
    for _ in range(2):  # two timed reference samples in a row: one wait
        with e.freezer.hold([e.ep], stay=True):
            pass
    assert len(waits) == 1
    with e.freezer.hold([ref.ep], stay=True):  # the candidate runs: its queue may fill again
        pass
    with e.freezer.hold([e.ep], stay=True):
        pass
    assert len(waits) == 2
    e.freezer.release()


def test_a_process_that_cannot_be_signalled_fails_the_candidate_naming_why(engines, monkeypatch):
    e = engines()

    def refused(pid):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(freezer, "stop", refused)
    with pytest.raises(IdleEngineFailure) as info:
        with e.freezer.hold([e.ep]):
            pytest.fail("the sample must not start while the idle engine runs")
    assert info.value.code == "candidate_error"
    assert "could not be frozen" in info.value.message and "SIGSTOP: permission denied" in info.value.message
    assert "background work fails the run" in info.value.message


def test_a_member_that_never_stops_fails_within_the_bound(engines, monkeypatch):
    e = engines()
    monkeypatch.setattr(freezer, "stop", lambda pid: None)  # the signal is "sent", nothing stops
    t = time.monotonic()
    with pytest.raises(IdleEngineFailure) as info:
        with e.freezer.hold([e.ep]):
            pytest.fail("the sample must not start while the idle engine runs")
    assert time.monotonic() - t < freezer.STOP_TIMEOUT_S + 1.0
    assert info.value.code == "candidate_error"
    assert "did not stop within 5 s after SIGSTOP" in info.value.message
    assert re.search(r"still in state '[RS]'; stopped reads 'T'", info.value.message), info.value.message  # running, or waiting for the GIL


def test_the_trusted_engine_that_cannot_be_frozen_is_the_evaluators_failure(engines, monkeypatch):
    e = engines(role="baseline")
    monkeypatch.setattr(freezer, "stop", lambda pid: (_ for _ in ()).throw(PermissionError(1, "denied")))
    with pytest.raises(HarnessFailure) as info:
        with e.freezer.hold([e.ep]):
            pass
    assert info.value.code == "harness_error"
    assert "idle baseline engine" in info.value.message and "permission denied" in info.value.message
    assert not isinstance(info.value, IdleEngineFailure)


def test_work_done_while_idle_is_caught_by_the_cpu_accounting(engines, monkeypatch):
    e = engines()
    # a freezer that does not stop anything: the spinners go on working "while frozen"
    monkeypatch.setattr(freezer.Family, "freeze", lambda self, timeout=1.0: self.members())
    with pytest.raises(IdleEngineFailure) as info:
        with e.freezer.hold([e.ep]):
            time.sleep(0.3)
    assert info.value.code == "candidate_error"
    msg = info.value.message
    assert "ms of CPU time during a" in msg and "while it was idle" in msg, msg
    used = float(msg.split("used ")[1].split(" ms")[0])
    allowed = float(msg.split("allowed: ")[1].split(" ms")[0])
    assert used > allowed >= 2, msg


@needs_cgroup
def test_work_done_while_idle_is_caught_by_the_cgroups_accounting(engines, monkeypatch):
    e = engines(method="cgroup")
    monkeypatch.setattr(freezer.Family, "freeze", lambda self, timeout=1.0: self.members())
    with pytest.raises(IdleEngineFailure) as info:
        with e.freezer.hold([e.ep]):
            time.sleep(0.3)
    assert "ms of CPU time during a" in info.value.message


def test_the_allowance_is_the_larger_of_its_floor_and_its_fraction():
    # the constants the README names (and the justification in freezer.py is about)
    assert freezer.IDLE_CPU_ALLOWANCE_NS == 2_000_000 and freezer.IDLE_CPU_ALLOWANCE_FRACTION == 0.01


def test_cpu_ns_carries_what_exited_children_used(tmp_path):
    # a child that burns ~0.3 s in a grandchild, reaps it, then sleeps: the time is in cutime
    code = ("import os, time\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    t = time.process_time()\n"
            "    while time.process_time() - t < 0.3: pass\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "time.sleep(30)\n")
    ep = EngineProcess(str(tmp_path), "candidate", Measurer(), None)
    ep.proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while (len(ep._family().members()) > 1 or ep.cpu_ns() < 200_000_000) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(ep._family().members()) == 1  # the burner is gone (reaped) ...
        assert ep.cpu_ns() >= 200_000_000  # ... and its time stayed, in its parent's cutime
    finally:
        ep.close()


def test_a_bad_freezer_setting_is_refused_naming_the_values(monkeypatch):
    monkeypatch.setenv("DRYFT_FREEZER", "sometimes")
    with pytest.raises(HarnessFailure) as info:
        freezer.Freezer(lambda *a, **k: None)
    assert "DRYFT_FREEZER='sometimes'" in info.value.message and "auto, cgroup or signal" in info.value.message


def test_a_gpu_without_nvml_is_said_in_the_log_not_checked():
    # this machine has no pynvml: with a GPU present the log says what cannot be checked
    gpu = freezer.GpuIdle(present=True)
    if gpu.nvml is not None:
        pytest.skip("pynvml is importable here: the real NVML is used (harness/tests/gpu/freezer_nvml_probe.py)")
    text = freezer.Freezer(lambda *a, **k: None, method="signal", gpu=gpu).describe()
    assert "whether the frozen engine left queued GPU work cannot be determined here" in text and "not checked" in text
    assert freezer.Freezer(lambda *a, **k: None, method="signal", gpu=freezer.GpuIdle(present=False)).describe().count("GPU") == 0


class ReplayedNvml:
    """NVML's sample API replaying a device's utilisation: `levels` are the values of the samples
    NVML takes, one every `period` s from when the replay starts (the H200 samples every 200 ms)."""

    NVML_GPU_UTILIZATION_SAMPLES = 1
    NVML_ERROR_NOT_FOUND = 6

    class NVMLError(Exception):
        def __init__(self, value):
            super().__init__(value)
            self.value = value

    def __init__(self, levels, period=0.02):
        self.levels, self.period, self.t0 = levels, period, time.time()

    def nvmlDeviceGetSamples(self, handle, kind, since_us):
        assert kind == 1
        taken = int((time.time() - self.t0) / self.period)
        out = []
        for i in range(min(taken, len(self.levels) * 1000)):
            ts = int((self.t0 + (i + 1) * self.period) * 1e6)
            if ts > since_us:
                value = self.levels[min(i, len(self.levels) - 1)]
                out.append(type("S", (), {"timeStamp": ts, "sampleValue": type("V", (), {"uiVal": value})()})())
        if not out:
            raise self.NVMLError(self.NVML_ERROR_NOT_FOUND)
        return 1, out


def gpu_with(levels):
    gpu = freezer.GpuIdle(present=False)
    gpu.present, gpu.nvml, gpu.handles = True, ReplayedNvml(levels), ["gpu0"]
    return gpu


def test_the_gpu_wait_ends_at_the_first_idle_sample_after_the_freeze():
    # busy for the first 5 samples (the frozen engine's queued work draining), then idle
    ok, waited = gpu_with([90, 80, 70, 40, 10, 0]).wait_idle(timeout=2.0)
    assert ok and 0.1 <= waited < 1.0, waited


def test_a_gpu_still_busy_after_the_bound_fails_the_candidate(engines, monkeypatch):
    e = engines()
    e.freezer.gpu = gpu_with([100])  # never idle
    monkeypatch.setattr(freezer, "GPU_IDLE_TIMEOUT_S", 0.2)
    with pytest.raises(IdleEngineFailure) as info:
        with e.freezer.hold([e.ep]):
            pytest.fail("the trusted engine's sample must not start while the GPU is busy")
    assert info.value.code == "candidate_error" and "left the GPU busy for more than 0.2 s" in info.value.message
    assert not e.ep.family.frozen  # thawed all the same


def test_no_gpu_wait_before_the_candidates_own_sample(engines):
    e = engines(role="baseline")  # the idle engine is the trusted one: it synchronises every step
    e.freezer.gpu = gpu_with([100])
    t = time.monotonic()
    with e.freezer.hold([e.ep]):
        pass
    assert time.monotonic() - t < 0.5


@needs_cgroup
def test_an_engine_that_cannot_join_its_cgroup_is_stopped_with_signals_instead(engines, monkeypatch):
    def refused(self, root, timeout=1.0):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(freezer.Cgroup, "adopt", refused)
    log = []
    e = engines(method="auto", log=log)
    assert e.ep.family.cgroup is None and e.ep.family.leftover is not None
    assert any("could not be put into a cgroup of its own" in t and "SIGSTOP" in t for t in log), log
    assert_frozen_then_resumed(e)
    leftover = e.ep.family.leftover.path
    e.close()
    assert not os.path.exists(leftover)


@needs_cgroup
def test_a_demanded_cgroup_that_cannot_be_joined_is_the_evaluators_failure(engines, monkeypatch):
    monkeypatch.setattr(freezer.Cgroup, "adopt", lambda self, root, timeout=1.0: (_ for _ in ()).throw(OSError(13, "denied")))
    monkeypatch.setenv("DRYFT_FREEZER", "cgroup")
    with pytest.raises(HarnessFailure) as info:
        engines(method="cgroup")
    assert info.value.code == "harness_error" and "could not put the candidate engine into a cgroup of its own" in info.value.message


def test_a_device_nvml_cannot_read_is_said_once_and_no_longer_checked(engines):
    e = engines()
    gpu = gpu_with([0])

    def unreadable(handle, kind, since_us):
        raise ReplayedNvml.NVMLError(3)  # NVML_ERROR_NOT_SUPPORTED, as on a MIG slice

    gpu.nvml.nvmlDeviceGetSamples = unreadable
    gpu.nvml.nvmlDeviceGetUtilizationRates = lambda handle: unreadable(handle, 1, 0)
    e.freezer.gpu = gpu
    for _ in range(2):
        with e.freezer.hold([e.ep]):
            pass
    notes = [t for t in e.log if "cannot be determined here" in t]
    assert len(notes) == 1 and "not checked" in notes[0], e.log
    assert gpu.nvml is None
