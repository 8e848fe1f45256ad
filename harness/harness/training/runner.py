"""The trusted parent of a `deep-recurrence` training run.

``run(spec, submission_dir, events)`` is called by ``python -m harness run``. The parent:

* starts the child (``harness.training.child``) that imports submission.py and runs the
  evaluator-owned loop; the child gets the task's shapes and training seed, never the evaluation
  seed or examples;
* owns the clock: the training allowance starts when the child is ready to import the submission,
  and a child that has not reported the end of training by allowance + grace is killed (timeout);
* generates the hidden evaluation set itself, sends only its inputs when training is over, keeps
  the labels, and computes the accuracy from the predictions the child returns within the
  evaluation budget;
* alone writes events: the child's progress messages are validated and rate-limited first.
"""
from __future__ import annotations

import os
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from typing import Optional

from ..events import RunFailure
from ..paths import relative_to_submission
from .. import jail
from . import protocol
from .spec import SpecError, child_view, parse_training_spec

MAX_SUBMISSION_BYTES = 256 * 1024
#: Real seconds allowed for the child to import torch and the harness before the clock starts.
STARTUP_SECONDS = 180.0
CHILD_FAILURE_CODES = {"candidate_error", "rule_violation", "memory_limit", "timeout"}
HARNESS_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# A failed training run's verdict: the one shape of every harness failure (events.RunFailure).
RunFailed = RunFailure


def _spec_paths_from_argv() -> list:
    """The spec file holds the evaluation seed: the child may never open it."""
    out = []
    argv = sys.argv
    for i, a in enumerate(argv):
        if a == "--spec" and i + 1 < len(argv):
            out.append(os.path.abspath(argv[i + 1]))
        elif a.startswith("--spec="):
            out.append(os.path.abspath(a.split("=", 1)[1]))
    return out


def _allowed_roots(submission_dir: str) -> list:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, HARNESS_ROOT, tempfile.gettempdir(), submission_dir}
    try:
        roots.update(site.getsitepackages())
        roots.add(site.getusersitepackages())
    except Exception:
        pass
    roots.update(p for p in sys.path if p and os.path.isabs(p) and os.path.isdir(p))
    roots.update(["/usr", "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/etc", "/dev", "/sys", "/proc", "/opt", "/run", "/var", "/tmp"])
    home = os.path.expanduser("~")
    for sub in (".cache", ".triton", ".nv", ".config", ".local"):
        roots.add(os.path.join(home, sub))
    for var in ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME", "TMPDIR"):
        if os.environ.get(var):
            roots.add(os.environ[var])
    return sorted(roots)


def _preexisting_files(submission_dir: str, submission_path: str) -> list:
    """Files shipped beside submission.py: nothing but submission.py may be read."""
    out = []
    for dirpath, dirnames, filenames in os.walk(submission_dir):
        for f in filenames:
            full = os.path.join(dirpath, f)
            if os.path.abspath(full) != os.path.abspath(submission_path):
                out.append(full)
            if len(out) > 10000:
                return out
    return out


def run(spec_raw: dict, submission_dir: str, events) -> None:
    try:
        spec = parse_training_spec(spec_raw)
    except SpecError as exc:
        events.result("failed", f"invalid training spec: {exc}", "harness_error")
        return
    runner = _Runner(spec, submission_dir, events)
    try:
        runner.execute()
    except RunFailed as f:
        if f.detail:
            events.log(f.detail[-8000:], level="error")
        events.log(f"verdict: failed ({f.code}): {f.message}", level="error")
        events.result("failed", f.message, f.code, metrics=runner.partial_metrics(), detail=f.detail)
    finally:
        runner.stop_child()


class _Runner:
    def __init__(self, spec, submission_dir: str, events) -> None:
        self.spec = spec
        self.events = events
        self.submission_dir = os.path.abspath(submission_dir)
        self.submission_path = os.path.join(self.submission_dir, "submission.py")
        self.proc: Optional[subprocess.Popen] = None
        self.cache_dir: Optional[str] = None  # this run's compile caches (unjailed; start_child)
        self.limits: Optional[jail.JailLimits] = None
        self.trained: dict = {}
        self.training_wall: Optional[float] = None
        self.metric_every = min(1.0, max(0.05, spec.training_budget / 20))
        self._last_metric = 0.0  # the last loss point's time, seconds of training
        self._metrics_sent = 0
        # A progress line in the run's log about every tenth of the allowance, at least every 30 s:
        # a 1-hour Hard run logs one each 30 s, a 60 s Easy run ten.
        self.log_every = min(30.0, max(spec.training_budget / 10, self.metric_every))
        self._last_log: Optional[tuple] = None  # (monotonic time, tokens) of the last progress line

    # -- child -----------------------------------------------------------------------------
    def start_child(self) -> None:
        p2c_r, p2c_w = os.pipe()
        c2p_r, c2p_w = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = HARNESS_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["PYTHONUNBUFFERED"] = "1"
        env.pop("PYTHONSTARTUP", None)
        if not jail.enabled():
            # every run compiles from an empty cache (jail.COMPILE_CACHE_VARS says why); in the jail
            # its fresh /tmp holds them, here a folder made for this run and removed with it
            self.cache_dir = tempfile.mkdtemp(prefix="dryft-caches-")
            env.update(jail.fresh_caches(self.cache_dir))
        # -I would drop PYTHONPATH; -s keeps user site-packages out, -P-like safety comes from cwd below.
        cmd = [sys.executable, "-s", "-m", "harness.training.child", str(p2c_r), str(c2p_w)]
        # Its own process group (compile workers die with it); under the agent, its own jail too.
        try:
            self.proc, self.limits = jail.spawn(
                cmd, cwd=self.submission_dir, env=env, pass_fds=(p2c_r, c2p_w), role="training",
                memory_limit=None, stdin=None,
            )
        finally:
            os.close(p2c_r)
            os.close(c2p_w)
        self.to_child = p2c_w
        task = self.spec.task
        self.reader = protocol.Reader(c2p_r, max_payload=self.spec.eval_examples * task.sequence_length * 4 + 4096)

    def stop_child(self) -> None:
        try:
            self._stop_child()
        finally:
            if self.cache_dir is not None:
                shutil.rmtree(self.cache_dir, ignore_errors=True)
                self.cache_dir = None

    def _stop_child(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            members = jail.family(self.proc.pid)
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        jail.notify("training", "stopped")
        for fd in (getattr(self, "to_child", None), getattr(getattr(self, "reader", None), "fd", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.proc = None

    def child_died(self, when: str) -> RunFailed:
        rc = None
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if rc is not None and rc < 0 and -rc == signal.SIGKILL:
            return RunFailed(
                "memory_limit",
                f"the training process was killed (SIGKILL) {when}, most likely by the host's out-of-memory killer: "
                f"use less host memory",
            )
        return RunFailed(
            "candidate_error",
            f"the training process exited (code {rc}) {when} without reporting: do not call sys.exit/os._exit "
            f"or kill the process from submission.py",
        )

    def recv(self, deadline: float, when: str):
        try:
            msg = self.reader.recv(deadline)
        except protocol.ChannelClosed:
            raise self.child_died(when)
        except protocol.ProtocolError as exc:
            raise RunFailed("rule_violation", f"the training process wrote malformed data on the evaluator's channel: {exc}")
        return msg

    def handle_progress(self, header: dict, t0: float) -> None:
        kind = header.get("type")
        if kind == "metric":
            value, step = header.get("value"), header.get("step")
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not isinstance(step, int) or step < 0:
                return
            if value != value or value in (float("inf"), float("-inf")):
                return
            now = time.monotonic()
            tokens = header.get("tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
                self.log_progress(step, float(value), tokens, now, t0)
            at = self.point_time(header.get("elapsed"), now - t0)
            # The parent keeps the rate modest whatever the child sends: half a cadence apart by the
            # points' own times, and about one per cadence of the time that passed. Points a busy
            # parent reads together (made a cadence apart) pass; a flood does not.
            if self._metrics_sent and (
                at - self._last_metric < self.metric_every * 0.5
                or self._metrics_sent >= (now - t0) / self.metric_every + 2
            ):
                return
            self._last_metric = at
            self._metrics_sent += 1
            self.events.emit(
                {"type": "metric", "name": "loss", "step": step, "value": float(value), "elapsedMs": at * 1000.0}
            )
        elif kind == "check":
            name, passed, detail = header.get("name"), header.get("passed"), header.get("detail")
            if isinstance(name, str) and isinstance(passed, bool) and isinstance(detail, str):
                self.check(name[:64], passed, detail[:2000])
        elif kind == "log":
            level = header.get("level") if header.get("level") in ("info", "warn", "error") else "info"
            message = header.get("message")
            if isinstance(message, str):
                self.events.log(message[:2000], level=level)

    def point_time(self, made, parent_elapsed: float) -> float:
        """When a loss point was made, in seconds of training: the child's own `elapsed` (the same
        monotonic clock, started when it got "start"), so a point a busy parent reads late keeps its
        time; believed only between the last point's time and the parent's clock, since the child
        runs the submission's code. Without a usable one: the parent's clock."""
        if isinstance(made, (int, float)) and not isinstance(made, bool) and made == made and abs(made) != float("inf"):
            return min(parent_elapsed, max(float(made), self._last_metric))
        return max(parent_elapsed, self._last_metric)

    def check(self, name: str, passed: bool, detail: str) -> None:
        """A check event, and its verdict as a line of the run's log."""
        self.events.check(name, passed, detail)
        self.events.log(f"check {name}: {'pass' if passed else 'FAIL'}: {detail}", level="info" if passed else "error")

    def log_progress(self, step: int, loss: float, tokens: int, now: float, t0: float) -> None:
        """Step, loss, tokens/s since the last line, and the allowance left, at a steady cadence."""
        if self._last_log is not None and now - self._last_log[0] < self.log_every:
            return
        elapsed = now - t0
        since, before = self._last_log if self._last_log is not None else (t0, 0)
        rate = (tokens - before) / (now - since) if now > since else 0.0
        self._last_log = (now, tokens)
        budget = self.spec.training_budget
        self.events.log(
            f"training: step {step:,}, loss {loss:.4f}, {rate:,.0f} tokens/s, "
            f"{elapsed:.1f}s of {budget:.1f}s ({max(0.0, budget - elapsed):.1f}s left)"
        )

    def child_failure(self, header: dict) -> RunFailed:
        code = header.get("code")
        if code not in CHILD_FAILURE_CODES:
            code = "candidate_error"
        message = header.get("message") if isinstance(header.get("message"), str) else "the submission failed"
        detail = header.get("detail") if isinstance(header.get("detail"), str) else None
        # The traceback names submission.py and the evaluator, never the agent's folders.
        message = relative_to_submission(message, self.submission_dir)
        detail = relative_to_submission(detail, self.submission_dir) if detail else None
        hit = jail.explain(f"{message}\n{detail or ''}", self.limits) if code == "candidate_error" else None
        if hit is not None:
            return RunFailed(hit[0], f"{hit[1]}: {message}"[:4000], detail or None)
        return RunFailed(code, message[:4000], detail or None)

    # -- the run ---------------------------------------------------------------------------
    def validate_submission(self) -> None:
        if not os.path.isfile(self.submission_path):
            raise RunFailed("candidate_error", "the upload has no submission.py at its top level")
        size = os.path.getsize(self.submission_path)
        if size > MAX_SUBMISSION_BYTES:
            raise RunFailed("candidate_error", f"submission.py is {size:,} bytes; the limit is {MAX_SUBMISSION_BYTES:,} (256 KiB)")
        with open(self.submission_path, "rb") as fh:
            try:
                fh.read().decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RunFailed("candidate_error", f"submission.py must be UTF-8: {exc}")

    def execute(self) -> None:
        spec = self.spec
        self.validate_submission()
        self.events.log(
            f"{spec.benchmark} {spec.tier}"
            + (f"/{spec.dataset}" if spec.dataset else "")
            + f": training allowance {spec.training_budget:.1f}s (grace {spec.grace_seconds:.1f}s), "
            f"evaluation budget {spec.eval_budget:.1f}s, device {spec.device}"
        )
        self.start_child()
        protocol.send(
            self.to_child,
            {
                "type": "init",
                "spec": child_view(spec),
                "submissionPath": self.submission_path,
                "allowedRoots": _allowed_roots(self.submission_dir),
                "deniedFiles": _preexisting_files(self.submission_dir, self.submission_path) + _spec_paths_from_argv(),
            },
        )
        msg = self.recv(time.monotonic() + STARTUP_SECONDS, "while starting")
        if msg is None:
            raise RunFailed("infra_error", f"the training process did not start within {STARTUP_SECONDS:.0f}s")
        if msg[0].get("type") == "failure":
            # It could not get ready (torch, CUDA, the jail's devices): what it said is the only clue
            # an operator gets, so it goes into the result rather than "unexpected first message".
            said = str(msg[0].get("message") or "no message")
            prefix = "the training process failed: "
            said = said[len(prefix):] if said.startswith(prefix) else said
            raise RunFailed(
                "harness_error",
                f"the training process failed while starting: {said[:2000]}",
                str(msg[0].get("detail") or "")[-20000:],
            )
        if msg[0].get("type") != "ready":
            raise RunFailed("harness_error", f"unexpected first message from the training process: {msg[0].get('type')!r}")

        # -- training: the parent's clock is the one that counts --
        budget, grace = spec.training_budget, spec.grace_seconds
        t0 = time.monotonic()
        protocol.send(self.to_child, {"type": "start"})
        self.t0 = t0
        hard_deadline = t0 + budget + grace
        while True:
            msg = self.recv(hard_deadline, "during training")
            if msg is None:
                raise RunFailed(
                    "timeout",
                    f"training did not end within the allowance of {budget:.1f}s (+{grace:.1f}s grace); the clock includes "
                    f"import, model construction and compilation, and one update must not run past the deadline",
                )
            header = msg[0]
            if header.get("type") == "failure":
                raise self.child_failure(header)
            if header.get("type") == "trained":
                self.trained = header
                break
            self.handle_progress(header, t0)
        self.training_wall = time.monotonic() - t0
        if self.training_wall > budget + grace:
            raise RunFailed("timeout", f"training took {self.training_wall:.1f}s, over the allowance of {budget:.1f}s (+{grace:.1f}s grace)")
        self.check(
            "deadline", True, f"training ended after {self.training_wall:.2f}s of a {budget:.1f}s allowance (grace {grace:.1f}s)"
        )
        done = self.partial_metrics()
        loss = done.get("finalLoss")
        self.events.log(
            f"training ended after {self.training_wall:.1f}s: {done.get('updates', 0):,} updates, "
            f"{done.get('steps', 0):,} steps, {done.get('tokensSeen', 0):,} tokens"
            + (f", final loss {loss:.4f}" if isinstance(loss, (int, float)) else "")
        )

        # -- final evaluation: inputs out, predictions back, labels never leave this process --
        # The hidden set is built only now, in this process (a run that fails earlier never pays
        # for torch here), and before the evaluation clock starts.
        import torch

        from .tasks import eval_set

        eval_inputs, eval_labels, eval_valid = eval_set(spec.task, spec.eval_seed, spec.eval_examples)

        n, length = eval_inputs.shape
        self.events.log(f"final evaluation: {n:,} hidden examples, budget {spec.eval_budget:.1f}s")
        payload = eval_inputs.to(torch.int32).contiguous().numpy().astype("<i4", copy=False).tobytes()
        te = time.monotonic()
        protocol.send(self.to_child, {"type": "eval", "rows": int(n), "length": int(length)}, payload)
        eval_deadline = te + spec.eval_budget
        while True:
            msg = self.recv(eval_deadline, "during final evaluation")
            if msg is None:
                raise RunFailed(
                    "timeout",
                    f"final evaluation of {n} examples did not finish within its budget of {spec.eval_budget:.1f}s: "
                    f"use a larger eval_batch_size or a cheaper eval-mode forward",
                )
            header, data = msg
            if header.get("type") == "failure":
                raise self.child_failure(header)
            if header.get("type") == "predictions":
                break
            if header.get("type") in ("log", "check"):
                self.handle_progress(header, t0)
        eval_wall = time.monotonic() - te
        if len(data) != n * length * 4:
            raise RunFailed("candidate_error", f"final evaluation returned {len(data)} bytes, expected {n * length * 4}")
        preds = torch.frombuffer(bytearray(data), dtype=torch.int32).reshape(n, length).to(torch.long)
        self.score(preds, eval_labels, eval_valid, eval_wall)

    def score(self, preds, labels, valid, eval_wall: float) -> None:
        import torch

        spec = self.spec
        correct = (preds == labels) & valid
        total = int(valid.sum())
        acc = 100.0 * int(correct.sum()) / max(1, total)
        first = valid & ~torch.cat([torch.zeros_like(valid[:, :1]), valid[:, :-1]], dim=1)
        acc_first = 100.0 * int((correct & first).sum()) / max(1, int(first.sum()))
        exact = 100.0 * float(((correct | ~valid).all(dim=1)).float().mean())
        metrics = self.partial_metrics()
        metrics.update(
            {
                "accuracy": round(acc, 4),
                "accuracyFirstTarget": round(acc_first, 4),
                "exactSequences": round(exact, 4),
                "chanceAccuracy": round(100.0 / spec.task.num_classes, 4),
                "evalExamples": int(labels.shape[0]),
                "evalTokens": total,
                "evalSeconds": round(eval_wall, 3),
            }
        )
        tokens = int(metrics.get("tokensSeen", 0))
        train_s = self.training_wall or 0.0
        self.events.emit(
            {
                "type": "sample",
                "workload": spec.dataset or spec.tier,
                "index": 0,
                "warmup": False,
                "ttftMs": None,
                "tpotMs": None,
                "tps": tokens / train_s if train_s > 0 else None,
                "totalMs": train_s * 1000.0,
                "tokens": tokens,
                "peakMemoryBytes": metrics.get("peakMemoryBytes"),
                "metrics": metrics,
            }
        )
        self.check("eval_budget", True, f"final evaluation took {eval_wall:.2f}s of {spec.eval_budget:.1f}s")
        self.events.log(
            f"final evaluation: accuracy {acc:.2f}% ({total:,} scored tokens; first target {acc_first:.2f}%, "
            f"exact sequences {exact:.2f}%, chance {100.0 / spec.task.num_classes:.2f}%) in {eval_wall:.2f}s"
        )
        self.events.log(f"verdict: succeeded, score {acc:.2f} (accuracy in percent)")
        self.events.result(
            "succeeded",
            f"accuracy {acc:.2f}% on {labels.shape[0]:,} hidden examples ({total:,} scored tokens; chance "
            f"{100.0 / spec.task.num_classes:.2f}%) after {metrics.get('updates', 0):,} updates, "
            f"{metrics.get('steps', 0):,} steps, {tokens:,} tokens in {train_s:.1f}s",
            None,
            score=round(acc, 4),
            metrics=metrics,
        )

    def partial_metrics(self) -> dict:
        out = {}
        for key in ("steps", "updates", "tokensSeen", "examplesSeen", "finalLoss", "modelStateElements", "peakMemoryBytes"):
            v = self.trained.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf"):
                out[key] = v
        if self.training_wall is not None:
            out["trainingSeconds"] = round(self.training_wall, 3)
        out["trainingAllowanceSeconds"] = self.spec.training_budget
        return out
