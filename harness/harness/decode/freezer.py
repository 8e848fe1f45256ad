"""The idle engine is frozen while the other engine's sample is timed (harness/README.md, "The idle
engine is frozen").

An official run keeps two engine children alive side by side (the trusted baseline or reference and
the candidate). Whatever one of them does while the other one's sample is timed is on the other
one's clock: a candidate whose helpers burn the CPU only while it is idle slows the baseline and
raises its own score. So around every sample (warm-ups included) the parent

1. freezes every idle engine: every process of its child (in the jail the bubblewrap process and its
   whole pid namespace, which may fork, setsid or leave its process group but never the tree; without
   the jail the child's process group and every descendant, `jail.family`), by
   - a cgroup v2 freezer: the child was born in a cgroup of its own below the harness's (jail.in_cgroup)
     (`cgroup.freeze`, verified by `cgroup.events` reading `frozen 1` and by every member of the
     family being in that cgroup), where the harness can make one; otherwise
   - SIGSTOP of every member, repeated until a walk of the family finds no process it has not
     stopped, and verified by every task (thread) of every member reading state T or t (Z for one
     that exited, D for one asleep in the kernel, which stops as soon as it returns) in
     /proc/<pid>/task/<tid>/stat;
   within STOP_TIMEOUT_S, or the run fails;
2. reads the idle engine's CPU time (the cgroup's cpu.stat, or per task from /proc), and on a GPU
   waits until the device reads idle (NVML) before a trusted engine's timed sample starts, so that
   no work the frozen candidate queued runs on the trusted engine's clock (once per stretch the
   candidate stays frozen; an untimed warm-up does not wait);
3. after the sample reads the CPU time again: more than the allowance (IDLE_CPU_ALLOWANCE_NS or
   IDLE_CPU_ALLOWANCE_FRACTION of the sample's wall time, whichever is larger), or a process that
   appeared while frozen, fails the run;
4. thaws it (SIGCONT to every member / `cgroup.freeze` 0) when it is to run again, whatever
   happened: the runner keeps an engine frozen across two samples of the other one in a row
   (pairing.round_order) and the checks between them, accounting its CPU time from one sample's end
   to the next, and thaws it at once on any failure.

Failures: the idle engine is the candidate -> IdleEngineFailure("candidate_error") naming why; the
idle engine is trusted (baseline, reference) -> HarnessFailure("harness_error").

What it does not cover: GPU work the frozen engine queued is only waited for where NVML is importable
(pynvml) and reads the device (else the run log says it could not be checked); NVML reads the whole
device, so this assumes nothing but the run's engines uses the slot's GPU; a process the parent
cannot see (outside its pid namespace) is beyond both the walk and the accounting; without the jail
and without a cgroup, a process that leaves both the process group and the tree (setsid and a double
fork, re-parented to init) escapes the walk (the jail's pid namespace re-parents orphans to the
engine's own pid 1, and a cgroup holds them whatever they do).
"""
from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional

from .. import jail
from .failures import HarnessFailure, IdleEngineFailure

#: How long every member of the idle engine has to reach the stopped (or frozen) state. A stop is
#: taken by the task itself the next time it runs, so on a loaded machine it waits for a CPU: the
#: 2-core box at a load average near 90 took up to 1.6 s (median 0.6 s); on an idle one it takes
#: well under a millisecond (harness/README.md). 5 s keeps a busy machine from failing an honest engine.
STOP_TIMEOUT_S = 5.0
#: How much CPU time a frozen engine may gain over one sample of the other engine: the larger of
#: 2 ms and 1 % of that sample's wall time. Frozen as verified, it gains none at all (measured:
#: 0 ns over every hold of the freezer's tests and of the timing script in harness/README.md); the
#: floor only absorbs the few microseconds the scheduler books on a task just after its state reads
#: T (it sets the state, then schedules away). 1 % of the wall time is the most that work can matter:
#: even if every nanosecond of it were taken from the timed engine's core it slows that one sample by
#: at most 1 %, below the per-sample noise of the pairs, whereas the burners this catches took 50 %
#: and more (issue 29: baseline samples 227-281 ms against 144-170 ms).
IDLE_CPU_ALLOWANCE_NS = 2_000_000
IDLE_CPU_ALLOWANCE_FRACTION = 0.01
#: Before a trusted engine's sample on a GPU: how long the device may take to read idle after the
#: candidate was frozen (the work it queued), and how often NVML is asked.
GPU_IDLE_TIMEOUT_S = 5.0
GPU_POLL_S = 0.005
#: DRYFT_FREEZER: "auto" (a cgroup where one can be made, else signals), "cgroup" or "signal".
FREEZER_ENV = "DRYFT_FREEZER"

TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
STOPPED = frozenset("Tt")
DEAD = frozenset("ZX")
# D: asleep in the kernel, uninterruptibly (a vfork parent waiting for its stopped child, a read of
# a slow file): it runs no code of its own and stops the moment it returns to it; whatever the kernel
# does for it meanwhile is on its CPU time, which the hold checks.
HELD = STOPPED | DEAD | frozenset("D")


class FreezeError(Exception):
    """The idle engine could not be frozen or accounted for, or worked while frozen: why, in words."""


def _read(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return None


def _stat_fields(raw: bytes) -> list[bytes]:
    """/proc/<pid>/stat after the command name: [state, ppid, pgrp, ...] (field 3 onwards)."""
    return raw[raw.rfind(b")") + 2:].split()


def _tasks(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def task_states(pid: int) -> dict:
    """{tid: state letter} of every thread of one process ({} when it is gone)."""
    out = {}
    for tid in _tasks(pid):
        raw = _read(f"/proc/{pid}/task/{tid}/stat")
        if raw:
            out[int(tid)] = _stat_fields(raw)[0].decode()
    return out


@dataclass
class Usage:
    """One reading of an engine family's CPU time: per live task (ns, schedstat), and per member the
    clock-tick totals of /proc/<pid>/stat (utime+stime, and cutime+cstime: what its reaped children
    used), which carry what exited threads and children did."""

    members: frozenset
    tasks: dict = field(default_factory=dict)  # tid -> ns on the CPU
    own_ticks: dict = field(default_factory=dict)  # pid -> utime + stime
    child_ticks: dict = field(default_factory=dict)  # pid -> cutime + cstime
    cgroup_ns: Optional[int] = None
    _owner: dict = field(default_factory=dict)  # tid -> pid

    def total_ns(self) -> int:
        if self.cgroup_ns is not None:
            return self.cgroup_ns
        total = 0
        for pid in self.members:
            live = sum(ns for tid, ns in self.tasks.items() if self._owner.get(tid) == pid)
            total += max(live, self.own_ticks.get(pid, 0) * TICK_NS) + self.child_ticks.get(pid, 0) * TICK_NS
        return total


def worked_ns(before: Usage, after: Usage) -> int:
    """CPU time the family used between two readings (a lower bound, to the nanosecond for live
    tasks; exited threads and reaped children through the clock-tick totals)."""
    if before.cgroup_ns is not None and after.cgroup_ns is not None:
        return max(0, after.cgroup_ns - before.cgroup_ns)
    live = 0
    per_member: dict = {}
    for tid, ns in after.tasks.items():
        gained = max(0, ns - before.tasks.get(tid, 0))
        live += gained
        per_member[after._owner.get(tid)] = per_member.get(after._owner.get(tid), 0) + gained
    exited = 0
    for pid in after.members & before.members:
        exited += max(0, after.child_ticks.get(pid, 0) - before.child_ticks.get(pid, 0)) * TICK_NS
        # threads that ran and exited: their time is in the group's utime+stime only (two counters,
        # each truncated to a tick, hence the slack of two ticks)
        group = (after.own_ticks.get(pid, 0) - before.own_ticks.get(pid, 0)) * TICK_NS
        exited += max(0, group - per_member.get(pid, 0) - 2 * TICK_NS)
    return live + exited


def usage_of(members: Iterable[int]) -> Usage:
    u = Usage(members=frozenset(members))
    for pid in u.members:
        raw = _read(f"/proc/{pid}/stat")
        if not raw:
            continue
        f = _stat_fields(raw)
        # fields 14-17 of stat (utime, stime, cutime, cstime) are f[11:15]
        u.own_ticks[pid] = int(f[11]) + int(f[12])
        u.child_ticks[pid] = int(f[13]) + int(f[14])
        for tid in _tasks(pid):
            raw = _read(f"/proc/{pid}/task/{tid}/schedstat")
            if raw:
                u.tasks[int(tid)] = int(raw.split()[0])
                u._owner[int(tid)] = pid
    return u


# -- cgroup v2 ------------------------------------------------------------------------------------

def _own_cgroup_dir() -> Optional[str]:
    """The harness's own cgroup v2 folder, or None where there is no v2 hierarchy it can see."""
    raw = _read("/proc/self/cgroup")
    path = None
    for line in (raw or b"").decode().splitlines():
        if line.startswith("0::"):
            path = line[3:]
    if path is None:
        return None
    mount = None
    for line in (_read("/proc/self/mountinfo") or b"").decode().splitlines():
        left, _, right = line.partition(" - ")
        if right.split()[:1] == ["cgroup2"]:
            mount = left.split()[4]
            break
    if mount is None:
        return None
    return os.path.join(mount, path.lstrip("/"))


class Cgroup:
    """A cgroup v2 folder the harness made for one engine child (and removes when it is gone)."""

    def __init__(self, path: str) -> None:
        self.path = path

    @classmethod
    def make(cls, name: str) -> "Cgroup":
        """Raises OSError (or FreezeError) where it cannot be made here."""
        parent = _own_cgroup_dir()
        if parent is None:
            raise FreezeError("no cgroup v2 hierarchy is mounted where the harness can see it")
        path = os.path.join(parent, name)
        os.mkdir(path, 0o755)
        group = cls(path)
        if not os.path.exists(os.path.join(path, "cgroup.freeze")):
            group.remove()
            raise FreezeError("the kernel's cgroup v2 has no freezer (cgroup.freeze, Linux 5.2+)")
        return group

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.path, name), "w") as fh:
            fh.write(value)

    def procs(self) -> set:
        raw = _read(os.path.join(self.path, "cgroup.procs")) or b""
        return {int(x) for x in raw.split()}

    def adopt(self, root: int, timeout: float = STOP_TIMEOUT_S) -> None:
        """Moves every process of root's family into this cgroup; what they start later is born in it."""
        deadline = time.monotonic() + timeout
        while True:
            inside = self.procs()  # (zombies are in no cgroup's list)
            missing = [p for p in jail.family(root) if p not in inside and any(s not in DEAD for s in task_states(p).values())]
            if not missing:
                return
            for pid in missing:
                try:
                    self._write("cgroup.procs", str(pid))
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                raise FreezeError(f"processes {missing[:5]} could not be moved into the engine's cgroup")

    def frozen(self) -> bool:
        for line in (_read(os.path.join(self.path, "cgroup.events")) or b"").decode().splitlines():
            if line.startswith("frozen "):
                return line.split()[1] == "1"
        return False

    def freeze(self) -> None:
        self._write("cgroup.freeze", "1")

    def thaw(self) -> None:
        self._write("cgroup.freeze", "0")

    def usage_ns(self) -> int:
        for line in (_read(os.path.join(self.path, "cpu.stat")) or b"").decode().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
        raise FreezeError("the engine's cgroup has no cpu.stat usage_usec")

    def kill(self) -> None:
        try:
            self._write("cgroup.kill", "1")  # Linux 5.14+; the process-group kill still follows
        except OSError:
            pass

    def remove(self, wait: float = 1.0) -> None:
        deadline = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # an empty folder left behind; the next run makes its own
                time.sleep(0.01)


def cgroup_problem() -> Optional[str]:
    """None where the harness can make (and freeze) a cgroup of its own; else why not, in words."""
    name = f"dryft-probe-{os.getpid()}-{secrets.token_hex(3)}"
    try:
        group = Cgroup.make(name)
    except FreezeError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot make a cgroup below the harness's own ({exc.strerror or exc})"
    try:
        group.thaw()  # writable, not only makeable
    except OSError as exc:
        return f"cannot write the cgroup's cgroup.freeze ({exc.strerror or exc})"
    finally:
        group.remove()
    return None


# -- one engine's family ----------------------------------------------------------------------------

class Family:
    """Every process of one engine child: freeze, thaw and CPU time."""

    def __init__(self, root: int, cgroup: Optional[Cgroup] = None) -> None:
        self.root = root
        self.cgroup = cgroup
        self.leftover: Optional[Cgroup] = None  # a cgroup made for it but not used (Freezer.attach)
        self.stopped: set = set()
        self.frozen = False
        self.complete = False  # the last freeze verified every member (thaw needs no new walk)

    def members(self) -> list[int]:
        return jail.family(self.root)

    def usage(self, members: Optional[list] = None) -> Usage:
        """A reading of its CPU time; members: the family as just walked (freeze's), else walked
        now (with a cgroup: the processes in it, which is where a new one would be born)."""
        if self.cgroup is not None:
            inside = self.cgroup.procs()
            return Usage(members=frozenset(inside), cgroup_ns=self.cgroup.usage_ns())
        return usage_of(self.members() if members is None else members)

    def cpu_ns(self) -> int:
        return self.usage().total_ns()

    def freeze(self, timeout: float = STOP_TIMEOUT_S) -> list[int]:
        """Stops every member; returns them. FreezeError naming why where it cannot within timeout."""
        self.frozen, self.complete = True, False  # from here thaw() undoes whatever was done
        members = self._freeze_cgroup(timeout) if self.cgroup is not None else self._freeze_signals(timeout)
        self.complete = True
        return members

    def _freeze_cgroup(self, timeout: float) -> list[int]:
        deadline = time.monotonic() + timeout
        try:
            self.cgroup.freeze()
        except OSError as exc:
            raise FreezeError(f"its cgroup's cgroup.freeze cannot be written ({exc.strerror or exc})")
        pause = 0.0001
        while not self.cgroup.frozen():
            if time.monotonic() > deadline:
                raise FreezeError(f"its cgroup did not read frozen within {timeout:g} s")
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
        members = self.members()
        inside = self.cgroup.procs()
        outside = [p for p in members if p not in inside and any(s not in DEAD for s in task_states(p).values())]
        if outside:
            raise FreezeError(f"process(es) {outside[:5]} of it left its cgroup, so they cannot be frozen with it")
        return members

    def _freeze_signals(self, timeout: float) -> list[int]:
        deadline = time.monotonic() + timeout
        pause = 0.0001
        while True:
            members = self.members()
            new = [p for p in members if p not in self.stopped]
            for pid in new:
                try:
                    stop(pid)
                except ProcessLookupError:
                    continue
                except PermissionError:
                    raise FreezeError(f"process {pid} of it cannot be stopped (SIGSTOP: permission denied)")
                self.stopped.add(pid)
            if not new:
                running = {}
                for pid in members:
                    states = task_states(pid)
                    busy = {tid: s for tid, s in states.items() if s not in HELD}
                    if busy:
                        running[pid] = busy
                if not running:
                    return members
                if time.monotonic() > deadline:
                    pid, busy = next(iter(running.items()))
                    tid, state = next(iter(busy.items()))
                    raise FreezeError(
                        f"{len(running)} process(es) of it did not stop within {timeout:g} s after SIGSTOP "
                        f"(process {pid}, thread {tid} still in state {state!r}; stopped reads 'T')"
                    )
                time.sleep(pause)
                pause = min(pause * 2, 0.005)
            elif time.monotonic() > deadline:
                raise FreezeError(f"it kept starting processes for {timeout:g} s while being stopped")

    def thaw(self) -> None:
        if not self.frozen:
            return
        self.frozen = False
        if self.cgroup is not None:
            try:
                self.cgroup.thaw()
            except OSError:
                pass
        # a complete freeze stopped every member and nothing new can start while they are stopped;
        # after a failed one, whatever is there now gets SIGCONT as well
        for pid in sorted(self.stopped if self.complete else self.stopped | set(self.members())):
            try:
                os.kill(pid, signal.SIGCONT)
            except (ProcessLookupError, PermissionError):
                pass
        self.stopped = set()


def stop(pid: int) -> None:
    """SIGSTOP one process (a module-level function, so a test can make it fail)."""
    os.kill(pid, signal.SIGSTOP)


# -- the runner's freezer ---------------------------------------------------------------------------

class GpuIdle:
    """Whether the frozen candidate left work on the GPU, read from NVML (device-wide: under the agent
    NVML's pids are the host's and match none of the parent's, memory.py; the slot's devices are the
    only ones the sandbox has, and only the run's engines use them)."""

    def __init__(self, present: Optional[bool] = None) -> None:
        self.present = (bool(jail.gpu_nodes()) or _torch_cuda()) if present is None else present
        self.handles: list = []
        self.nvml = None
        self.problem: Optional[str] = None
        if not self.present:
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self.handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
            self.nvml = pynvml
        except Exception as exc:  # ImportError, NVMLError
            self.problem = f"{type(exc).__name__}: {exc}"

    def describe(self) -> str:
        if not self.present:
            return ""
        if self.nvml is None:
            return ("; whether the frozen engine left queued GPU work cannot be determined here "
                    f"(NVML through pynvml is unavailable: {self.problem}), so it is not checked")
        return (f"; before each trusted engine's timed sample the GPU must read idle (NVML utilisation of "
                f"{len(self.handles)} device(s), within {GPU_IDLE_TIMEOUT_S:g} s of freezing the candidate; "
                "once while the candidate stays frozen)")

    def busy(self, since_us: int) -> Optional[int]:
        """Percent busy of the busiest device in its newest NVML sample taken after since_us (a sample
        is the share of one sampling period, 200 ms on the H200, in which a kernel ran); None: some
        device has no sample since then yet."""
        nvml = self.nvml
        worst = 0
        for handle in self.handles:
            try:
                _, samples = nvml.nvmlDeviceGetSamples(handle, nvml.NVML_GPU_UTILIZATION_SAMPLES, since_us)
                fresh = [s for s in samples if s.timeStamp > since_us]
                if not fresh:
                    return None
                value = max(fresh, key=lambda s: s.timeStamp).sampleValue.uiVal
            except nvml.NVMLError as exc:
                if getattr(exc, "value", None) == getattr(nvml, "NVML_ERROR_NOT_FOUND", -1):
                    return None  # no sample since: wait for one
                # no samples API here: the rate averaged over NVML's last period
                value = nvml.nvmlDeviceGetUtilizationRates(handle).gpu
            worst = max(worst, value)
        return worst

    def wait_idle(self, timeout: Optional[float] = None) -> tuple[Optional[bool], float]:
        """Waits until every device's newest sample, taken after now, reads 0 %: (idle, seconds
        waited); idle None where NVML turned out unable to say (then it is not asked again)."""
        timeout = GPU_IDLE_TIMEOUT_S if timeout is None else timeout
        start = time.monotonic()
        since_us = time.time_ns() // 1000
        while True:
            try:
                level = self.busy(since_us)
            except self.nvml.NVMLError as exc:  # e.g. no utilisation on this device (MIG)
                self.problem, self.nvml = f"NVML cannot read the device's utilisation: {exc}", None
                return None, time.monotonic() - start
            if level == 0:
                return True, time.monotonic() - start
            if time.monotonic() - start > timeout:
                return False, time.monotonic() - start
            time.sleep(GPU_POLL_S)


def _torch_cuda() -> bool:
    torch = sys.modules.get("torch")  # only where the parent already uses torch (qwen3's reference)
    try:
        return bool(torch is not None and torch.cuda.is_available())
    except Exception:
        return False


class Freezer:
    """What the runner holds: picks the method once per run and freezes the idle engines around
    every sample (hold)."""

    def __init__(self, log: Callable[..., None], method: Optional[str] = None, gpu: Optional[GpuIdle] = None) -> None:
        self.log = log
        wanted = method or os.environ.get(FREEZER_ENV) or "auto"
        if wanted not in ("auto", "cgroup", "signal"):
            raise HarnessFailure("harness_error", f"{FREEZER_ENV}={wanted!r}: use auto, cgroup or signal.")
        self.why_not_cgroup = None if wanted == "signal" else cgroup_problem()
        if wanted == "cgroup" and self.why_not_cgroup:
            raise HarnessFailure("harness_error", f"{FREEZER_ENV}=cgroup, but {self.why_not_cgroup}.")
        self.method = "cgroup" if wanted != "signal" and self.why_not_cgroup is None else "signal"
        self.gpu = gpu if gpu is not None else GpuIdle()
        self.logged = False
        self.switch_ns: list = []  # freeze + verify + readings + thaw of every hold, for the log
        self.gpu_wait_s = 0.0  # of which waiting for the GPU to read idle
        self.kept: list = []  # engines a hold(stay=True) left frozen
        self.readings: dict = {}  # id(engine) -> its CPU reading at the end of the last body
        # the candidate has stayed frozen since the GPU last read idle: no wait is needed
        self.gpu_clean = False

    def describe(self) -> str:
        if self.method == "cgroup":
            text = ("freezer: cgroup v2 freezer (cgroup.freeze of a cgroup per engine child, verified by cgroup.events "
                    "and by every process of the engine being in it); CPU time from the cgroup's cpu.stat")
        else:
            text = ("freezer: SIGSTOP of every process of the idle engine, verified by /proc state T of every thread; "
                    "CPU time per thread from /proc")
            if self.why_not_cgroup and os.environ.get(FREEZER_ENV) != "signal":
                text += f" (no cgroup freezer: {self.why_not_cgroup})"
        return (text + f"; the idle engine may gain at most {IDLE_CPU_ALLOWANCE_NS / 1e6:g} ms or "
                f"{IDLE_CPU_ALLOWANCE_FRACTION * 100:g} % of the sample's wall time of CPU time" + self.gpu.describe())

    def prepare(self, role: str) -> Optional[Cgroup]:
        """Before an engine child starts: the cgroup it is to be born in (jail.spawn's cgroup), or
        None (signals; or it could not be made, which attach then handles as before)."""
        if self.method != "cgroup":
            return None
        try:
            return Cgroup.make(f"dryft-{role}-{os.getpid()}-{secrets.token_hex(3)}")
        except (OSError, FreezeError):
            return None  # attach tries again, and says why it cannot

    def attach(self, proc, cgroup: Optional[Cgroup] = None) -> None:
        """Right after an engine child started (in cgroup, from prepare, where it could join it):
        its family, and its cgroup holding every process of it (adopt moves any that are not in it)."""
        proc.family = Family(proc.proc.pid)
        if self.method == "cgroup":
            try:
                # on the engine at once: its close() kills what is in it and removes it
                proc.family.cgroup = cgroup
                if cgroup is None:
                    proc.family.cgroup = Cgroup.make(f"dryft-{proc.role}-{os.getpid()}-{secrets.token_hex(3)}")
                proc.family.cgroup.adopt(proc.proc.pid)
            except (OSError, FreezeError) as exc:
                if os.environ.get(FREEZER_ENV) == "cgroup":
                    raise HarnessFailure("harness_error", f"The evaluator could not put the {proc.role} engine into a cgroup of its own: {exc}")
                # auto: this engine is stopped with signals instead (its cgroup, with whatever got into
                # it, is still ended and removed at close)
                proc.family.leftover, proc.family.cgroup = proc.family.cgroup, None
                self.log(f"freezer: the {proc.role} engine could not be put into a cgroup of its own ({exc}); "
                         "it is stopped with SIGSTOP of every process instead", "warn")

    def _fail(self, proc, why: str):
        if proc.role == "candidate":
            return IdleEngineFailure(
                "candidate_error",
                f"The candidate engine {why} while it was idle (the other engine's sample was being timed); an engine "
                "must do no work between its own samples: it is stopped then, and background work fails the run.",
            )
        return HarnessFailure("harness_error", f"The evaluator could not keep the idle {proc.role} engine still: it {why}.")

    @contextlib.contextmanager
    def hold(self, idle: list, timed: bool = True, stay: bool = False):
        """Freezes every engine of `idle` around the body (one sample of another engine); raises
        IdleEngineFailure/HarnessFailure when one cannot be frozen or gained CPU time meanwhile.

        timed: the body is timed (before a trusted engine's timed sample the GPU must read idle; an
        untimed warm-up's time is nobody's score, so it does not wait). stay: the idle engines stay
        frozen after the body, until a later hold has one of them run (it is thawed then) or
        release(): an engine frozen across two samples of the other one in a row, and the parent's
        checks between them, is frozen and verified once, its CPU time accounted from one body's end
        to the next, and one GPU wait serves both samples."""
        if not idle and not self.kept:
            yield
            return
        t0 = time.perf_counter_ns()
        spent = 0  # the switch's own cost: freeze, verify, readings, thaw
        kept = self.kept
        self.kept = []
        try:
            for proc in kept:
                if proc not in idle:
                    self._thaw(proc)  # it runs next
                    self.readings.pop(id(proc), None)
            if not idle:
                spent += time.perf_counter_ns() - t0
                yield
                return
            if not self.logged:
                self.logged = True
                self.log(self.describe())
            before = {}
            for proc in idle:
                if proc in kept:
                    # frozen since the last body: its reading then starts this one's account, so
                    # whatever it gained in between counts too
                    before[id(proc)] = self.readings.pop(id(proc))
                    continue
                try:
                    members = proc.freeze()
                    before[id(proc)] = proc.family.usage(members)
                except FreezeError as exc:
                    raise self._fail(proc, f"could not be frozen: {exc}")
                except OSError as exc:
                    raise self._fail(proc, f"could not be frozen or accounted for ({exc})")
                if proc.role == "candidate":
                    self.gpu_clean = False  # it ran until now
            if timed and not self.gpu_clean and self.gpu.nvml is not None and any(p.role == "candidate" for p in idle):
                idle_now, waited = self.gpu.wait_idle()
                self.gpu_wait_s += waited
                if idle_now is None:
                    self.log("freezer: whether the frozen engine left queued GPU work cannot be determined here "
                             f"({self.gpu.problem}); from now on it is not checked", "warn")
                elif not idle_now:
                    cand = next(p for p in idle if p.role == "candidate")
                    raise self._fail(cand, f"left the GPU busy for more than {waited:.1f} s after it was frozen "
                                           "(work it queued before, or work of a process the evaluator cannot stop)")
                else:
                    self.gpu_clean = True  # until the candidate runs again
            t1 = time.perf_counter_ns()
            spent += t1 - t0
            yield
            t2 = time.perf_counter_ns()
            wall = t2 - t1
            allowance = max(IDLE_CPU_ALLOWANCE_NS, int(IDLE_CPU_ALLOWANCE_FRACTION * wall))
            for proc in idle:
                try:
                    after = proc.family.usage()
                except (OSError, FreezeError) as exc:
                    raise self._fail(proc, f"could not be accounted for ({exc})")
                first = before[id(proc)]
                born = sorted(after.members - first.members)
                if born:
                    raise self._fail(proc, f"started process(es) {born[:5]} while frozen")
                used = worked_ns(first, after)
                if used > allowance:
                    raise self._fail(proc, f"used {used / 1e6:.1f} ms of CPU time during a {wall / 1e6:.1f} ms sample "
                                           f"(allowed: {allowance / 1e6:g} ms)")
                self.readings[id(proc)] = after
            if stay:
                self.kept = list(idle)
            spent += time.perf_counter_ns() - t2
        finally:
            t3 = time.perf_counter_ns()
            if not self.kept:
                # not kept (or the hold failed): every engine it froze runs again, whatever happened
                self.kept = list(idle) + [p for p in kept if p not in idle]
                self.release()
            self.switch_ns.append(spent + time.perf_counter_ns() - t3)

    def _thaw(self, proc) -> None:
        proc.thaw()
        if proc.role == "candidate":
            self.gpu_clean = False

    def release(self) -> None:
        """Thaws the engines a hold kept frozen (before they are closed: a frozen child cannot read
        its quit message)."""
        kept, self.kept = self.kept, []
        for proc in kept:
            self._thaw(proc)
        self.readings.clear()
