"""The parent's handle on one untrusted engine process (baseline or candidate).

The child is started with `start_new_session=True` (its own process group, so a deadline kills it
and everything it spawned), `close_fds=True` with only its end of a private socket pair passed
(the events descriptor and every other descriptor of the parent stay closed in the child), and
stdout/stderr inherited: what the engine prints is plain run-log output, never an event. Under the
agent (DRYFT_JAIL=1) it is started through jail.spawn: its own pid namespace, uid, seccomp filter,
size-capped workspace and limits (see jail.py); a sandbox that cannot be built is a JailError (the
evaluator's failure), everything the child does after that is the engine's.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from array import array
from dataclasses import dataclass, field
from typing import Optional

from .. import jail
from ..channel_errors import ChannelClosed, ProtocolError
from ..paths import relative_to_submission
from .channel import Channel, Deadline, encode_generate, encode_json
from .failures import EngineFailure  # noqa: F401 (defined there, re-exported)
from .freezer import Family
from .memory import Measurer, Monitor

CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
KILL_GRACE_SECONDS = 2.0


@dataclass
class Sample:
    steps: list  # list of array('q'), one per step, each of batch ids
    start_ns: int
    stamps: list  # perf_counter_ns at which each step arrived
    parent_ns: int = 0  # the parent's own handling time over all steps
    child_overhead_ns: Optional[int] = None  # what the child says its framing cost (untrusted)

    @property
    def total_ns(self) -> int:
        return self.stamps[-1] - self.start_ns

    @property
    def ttft_ns(self) -> int:
        return self.stamps[0] - self.start_ns

    @property
    def tpot_ns(self) -> Optional[float]:
        if len(self.stamps) < 2:
            return None
        return (self.stamps[-1] - self.stamps[0]) / (len(self.stamps) - 1)

    def sequences(self) -> list[list[int]]:
        """Tokens per sequence (transposed from per-step)."""
        batch = len(self.steps[0])
        return [[step[b] for step in self.steps] for b in range(batch)]


def _started(pids) -> dict:
    """{pid: start time} from /proc/<pid>/stat (field 22) of those that exist and are not zombies."""
    out = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                rest = fh.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if rest[0] not in (b"Z", b"X"):
            out[pid] = int(rest[19])
    return out


# The PYTHONHASHSEED every engine child runs with (harness/README.md, "Timing and score").
ENGINE_HASH_SEED = "0"


@dataclass
class EngineProcess:
    submission_dir: str
    role: str  # "baseline" | "reference" | "candidate", for messages
    measurer: Measurer
    memory_limit: Optional[int]
    proc: Optional[subprocess.Popen] = None
    channel: Optional[Channel] = None
    monitor: Optional[Monitor] = None
    killed_for: Optional[str] = None
    extra_env: dict = field(default_factory=dict)
    limits: Optional[jail.JailLimits] = None
    inside_dir: Optional[str] = None  # the workspace's path as the child sees it
    family: Optional[Family] = None  # every process of the child, for the freezer (freezer.py)
    cache_dir: Optional[str] = None  # the candidate's compile cache, bound in its jail (compile_cache.py)
    _seen: dict = field(default_factory=dict)  # pid -> start time of members seen before a stop

    def start(self, cgroup: Optional[str] = None) -> None:
        """cgroup: the folder its child is born in (Freezer.prepare), or None."""
        parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        child_fd = child_sock.fileno()
        env = dict(os.environ)
        env.update(self.extra_env)
        env["PYTHONUNBUFFERED"] = "1"
        # One fixed string-hash seed for every engine child. With Python's default per-process
        # random seed, dict and set layouts differ from process to process, and so does the speed
        # of the same code by a few percent for a whole run: the unchanged starter against the
        # baseline scored 88-109 (sd 5.6) with random seeds and 95-106 (sd 2.9) with this one, at
        # the same load, interleaved (bench/SCORES.md). Both children get the same seed, so
        # identical code lays out identically, and a run repeats the previous one's layout.
        env["PYTHONHASHSEED"] = ENGINE_HASH_SEED
        # In the jail every engine child sees its workspace and channel at one path and number
        # (jail.engine_view): the same argv, HOME and cwd for the baseline and the candidate, byte for
        # byte, and the same address-space layout (harness/README.md, "The same conditions").
        self.inside_dir, inside_fd = jail.engine_view(self.submission_dir, child_fd)
        self.measurer.begin()
        try:
            self.proc, self.limits = jail.spawn(
                [sys.executable, "-u", CHILD_SCRIPT, "--fd", str(inside_fd), "--submission", self.inside_dir],
                cwd=self.submission_dir,
                env=env,
                pass_fds=(child_fd,),
                role=self.role,
                memory_limit=self.memory_limit,
                engine=True,
                cgroup=cgroup,
                cache_dir=self.cache_dir,
            )
        except jail.JailError:
            parent_sock.close()
            raise
        finally:
            child_sock.close()
        self.channel = Channel(parent_sock)
        self.monitor = Monitor(self.measurer, self.proc.pid, self.memory_limit, lambda: self.kill("memory"))
        self.monitor.start()

    # -- the freezer (freezer.py: the idle engine is stopped while the other one is timed) ------

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _family(self) -> Family:
        if self.family is None:
            self.family = Family(self.proc.pid)
        return self.family

    def freeze(self) -> list[int]:
        """Stops every process of the child (cgroup freezer or SIGSTOP, verified); returns them.
        freezer.FreezeError naming why where it cannot within freezer.STOP_TIMEOUT_S."""
        members = self._family().freeze()
        self._seen.update(_started(members))  # what close() must kill even if it leaves the tree
        return members

    def thaw(self) -> None:
        """Resumes what freeze() stopped (a no-op when it is not frozen)."""
        if self.family is not None:
            self.family.thaw()

    def cpu_ns(self) -> int:
        """CPU time of every process of the child so far, with what its exited children used."""
        return self._family().cpu_ns()

    # -- lifecycle -------------------------------------------------------------------------

    def kill(self, reason: str = "stop") -> None:
        """TERM the process group, wait a short grace, then KILL it."""
        if self.proc is None:
            return
        if self.killed_for is None:
            self.killed_for = reason
        self.thaw()  # a stopped process would hold its TERM until the grace ran out
        pgid = self.proc.pid
        # Listed before anything is signalled: once the leader is gone, a member that left its
        # group (setsid) is re-parented away from the tree, and no later walk finds it.
        if self.proc.poll() is None:
            self._seen.update(_started(jail.family(pgid)))

        def kill_members() -> None:
            now = _started(jail.family(pgid) if self.proc.poll() is None else [])
            for pid, start in sorted({**self._seen, **now}.items()):
                if _started([pid]).get(pid) != start:
                    continue  # gone, or the number is another process's now
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

        for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(pgid, sig)
            except (ProcessLookupError, PermissionError):
                pass
            if sig == signal.SIGKILL:
                kill_members()  # those that left the group (in the jail: the whole pid namespace)
            try:
                self.proc.wait(timeout=wait)
                # the leader is gone; make sure no member of its group, or that left it, survives it
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                kill_members()
                return
            except subprocess.TimeoutExpired:
                continue

    def close(self) -> None:
        """Ask the child to quit, then make sure its group is gone."""
        if self.proc is None:
            return
        self.thaw()  # a frozen child could not read its quit message
        if self.proc.poll() is None:
            self._seen.update(_started(jail.family(self.proc.pid)))  # before it can exit and orphan them
        if self.proc.poll() is None and self.channel is not None and not self.channel.closed:
            try:
                self.channel.send(encode_json(b"Q", {}))
                self.proc.wait(timeout=KILL_GRACE_SECONDS)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill("stop")
        for group in (self.family.cgroup, self.family.leftover) if self.family is not None else ():
            if group is not None:
                group.kill()  # whatever of it left the process group and the tree
                group.remove()
        jail.notify(self.role, "stopped")
        if self.monitor is not None:
            self.monitor.stop()
        if self.channel is not None:
            self.channel.close()

    @property
    def peak_memory(self) -> Optional[int]:
        return self.monitor.peak if self.monitor else None

    # -- failures --------------------------------------------------------------------------

    def _exit_text(self) -> str:
        code = self.proc.poll() if self.proc else None
        if code is None:
            try:
                code = self.proc.wait(timeout=KILL_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                return "stopped answering"
        if code < 0:
            try:
                return f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"was killed by signal {-code}"
        return f"exited with code {code}"

    def _closed(self, during: str) -> EngineFailure:
        if self.monitor is not None and self.monitor.exceeded:
            return EngineFailure(
                "memory_limit",
                f"The {self.role} engine used {self.monitor.peak} bytes of {self.measurer.name} memory during {during}, over the limit of {self.memory_limit} bytes; it was stopped.",
            )
        text = self._exit_text()
        if self.limits is not None and self.limits.data and text == "was killed by signal SIGSEGV":
            text += f" (it may have run out of its memory limit of {jail.human(self.limits.data)})"
        return EngineFailure("candidate_error", f"The {self.role} engine process {text} during {during} without reporting an error.")

    def _error(self, payload: bytes, during: str) -> EngineFailure:
        try:
            err = json.loads(payload)
            kind, message, tb = err.get("kind"), str(err.get("message")), str(err.get("traceback") or "")
        except Exception:
            kind, message, tb = "exception", payload[:2000].decode("utf-8", "replace"), ""
        for root in (self.inside_dir or self.submission_dir, self.submission_dir):
            message, tb = relative_to_submission(message, root), relative_to_submission(tb, root)
        if kind == "contract":
            return EngineFailure("candidate_error", f"Engine contract violated during {during}: {message}", message)
        hit = jail.explain(f"{message}\n{tb}", self.limits)
        if hit is not None:
            return EngineFailure(hit[0], f"The {self.role} engine failed during {during}: {hit[1]} ({message})", tb or message)
        return EngineFailure("candidate_error", f"The engine raised during {during}: {message}", tb or message)

    # -- commands --------------------------------------------------------------------------

    def _ask(self, frame: bytes, answer: bytes, deadline_ns: int, during: str, timed_out: str,
             broken: str, unexpected: str) -> None:
        """One untimed request to the child and its one-frame answer: `timed_out` if none comes by the
        deadline (the child is stopped), the engine's own error as it raised it, a broken frame
        (`broken` with the reason) or another answer (`unexpected` with its tag) a protocol failure."""
        self.channel.send(frame)
        self._answer(answer, deadline_ns, during, timed_out, broken, unexpected)

    def _answer(self, answer: bytes, deadline_ns: int, during: str, timed_out: str, broken: str, unexpected: str) -> None:
        try:
            tag, payload, _ = self.channel.recv(deadline_ns)
        except Deadline:
            self.kill("timeout")
            raise EngineFailure("timeout", timed_out)
        except ChannelClosed:
            raise self._closed(during)
        except ProtocolError as exc:
            self.kill("protocol")
            raise EngineFailure("candidate_error", broken.format(exc))
        if tag == b"E":
            raise self._error(payload, during)
        if tag != answer:
            self.kill("protocol")
            raise EngineFailure("candidate_error", unexpected.format(repr(tag)))

    def load(self, model_path: str, deadline_ns: int, deadline_text: str) -> None:
        self.begin_load(model_path)
        self.finish_load(deadline_ns, deadline_text)

    def begin_load(self, model_path: str) -> None:
        """Sends Engine(model_path) without waiting: the engines of one run load side by side
        (untimed), and the parent loads its reference model meanwhile."""
        self.channel.send(encode_json(b"L", {"modelPath": model_path}))

    def finish_load(self, deadline_ns: int, deadline_text: str) -> None:
        self._answer(b"R", deadline_ns, "Engine(model_path)",
                     f"Engine(model_path) did not return within {deadline_text}; the engine process was stopped.",
                     "Engine(model_path): {}", "Engine(model_path): unexpected frame {} from the engine process")

    def prepare(self, deadline_ns: int, deadline_text: str) -> None:
        """Untimed barrier before a sample: the child collects garbage and answers."""
        self._ask(encode_json(b"P", {}), b"K", deadline_ns, "the pause between samples",
                  f"The engine process did not answer between samples within {deadline_text}; it was stopped.",
                  "between samples: {}", "unexpected frame {} from the engine process between samples")

    def generate(self, input_ids: list[list[int]], max_new_tokens: int, vocab_size: int,
                 deadline_ns: int, deadline_text: str, stop_after: Optional[int] = None) -> Sample:
        """One sample: exactly max_new_tokens steps, or exactly stop_after of them where the parent
        asks a trusted engine to stop early (runner.reference_steps)."""
        self.prepare(deadline_ns, deadline_text)
        batch = len(input_ids)
        expected = max_new_tokens if stop_after is None else stop_after
        frame = encode_generate(input_ids, max_new_tokens, stop_after)  # encoded before the clock starts
        step_bytes = 8 * batch
        steps: list = []
        stamps: list = []
        parent_ns = 0
        channel = self.channel
        during = f"generate(batch={batch}, max_new_tokens={max_new_tokens})"
        start = channel.send(frame)
        try:
            while True:
                tag, payload, stamp = channel.recv(deadline_ns)
                if tag == b"S":
                    if len(payload) != step_bytes:
                        raise EngineFailure("candidate_error", f"step {len(steps)} carried {len(payload) // 8} ids; expected {batch}")
                    ids = array("q")
                    ids.frombytes(payload)
                    steps.append(ids)
                    stamps.append(stamp)
                    if len(steps) > expected:
                        raise EngineFailure("candidate_error", f"generate yielded more than max_new_tokens={max_new_tokens} steps"
                                            if stop_after is None else f"the engine sent more than the {stop_after} steps asked for")
                    parent_ns += time.perf_counter_ns() - stamp
                elif tag == b"D":
                    if len(steps) != expected:
                        raise EngineFailure(
                            "candidate_error",
                            f"Engine contract violated: generate yielded {len(steps)} steps; it must yield exactly max_new_tokens={max_new_tokens}."
                            if stop_after is None else f"the engine stopped after {len(steps)} steps; {stop_after} were asked for",
                        )
                    try:
                        child_ns = int(json.loads(payload).get("childOverheadNs"))
                    except Exception:
                        child_ns = None
                    break
                elif tag == b"E":
                    raise self._error(payload, during)
                else:
                    raise EngineFailure("candidate_error", f"unexpected frame {tag!r} from the engine process during {during}")
        except Deadline:
            self.kill("timeout")
            raise EngineFailure("timeout", f"{during} did not finish within {deadline_text} ({len(steps)} of {max_new_tokens} steps arrived); the engine process was stopped.")
        except ChannelClosed:
            raise self._closed(during)
        except ProtocolError as exc:
            self.kill("protocol")
            raise EngineFailure("candidate_error", f"{during}: {exc}")
        except EngineFailure:
            self.kill("contract")
            raise
        if self.monitor is not None and self.measurer.applicable:
            self.monitor.poll()  # one reading at every sample's end, after the clock stopped
        for index, ids in enumerate(steps):
            if min(ids) < 0 or max(ids) >= vocab_size:
                bad = next(i for i in ids if i < 0 or i >= vocab_size)
                raise EngineFailure("candidate_error", f"step {index}: token id {bad} is outside the vocabulary [0, {vocab_size}).")
        return Sample(steps=steps, start_ns=start, stamps=stamps, parent_ns=parent_ns, child_overhead_ns=child_ns)
