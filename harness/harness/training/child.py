"""The child process: loads submission.py and runs the evaluator-owned training loop.

Started by the parent as ``python -m harness.training.child IN_FD OUT_FD``. The loop here is
trusted code, but it shares the process with the submission, so everything it reports is a claim
the parent checks against its own clock; the parent alone holds the evaluation labels, the event
channel and the verdict.

Sequence: ``init`` (from parent) → ``ready`` → ``start`` (the parent's training clock starts)
→ import, build, train → ``trained`` → ``eval`` inputs → ``predictions``.
"""
from __future__ import annotations

import math
import os
import sys
import time
import traceback
import types

from . import protocol
from .guard import Guard, RuleViolationError, guard_bundle, guard_model, install_torch_guards


class Failure(Exception):
    def __init__(self, code: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail


def _is_oom(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    text = str(exc).lower()
    # CUDA: torch.cuda.OutOfMemoryError (2.x) or "CUDA out of memory" (1.13); CPU: the allocator's message.
    return name == "OutOfMemoryError" or (
        isinstance(exc, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)
    )


class Child:
    def __init__(self, in_fd: int, out_fd: int) -> None:
        self.out_fd = out_fd
        self.reader = protocol.Reader(in_fd, max_payload=1 << 31)
        self.guard = Guard()
        self.last_loss = float("nan")

    # -- messages --------------------------------------------------------------------------
    def send(self, header: dict, payload: bytes = b"") -> None:
        protocol.send(self.out_fd, header, payload)

    def log(self, message: str, level: str = "info") -> None:
        self.send({"type": "log", "level": level, "message": message})

    def check(self, name: str, passed: bool, detail: str) -> None:
        self.send({"type": "check", "name": name, "passed": passed, "detail": detail})

    # -- participant calls -----------------------------------------------------------------
    def call(self, phase: str, fn, *args, what: str):
        """Run participant code in ``phase``; turn what goes wrong into the right failure."""
        previous = self.guard.phase
        self.guard.phase = phase
        try:
            return fn(*args)
        except Failure:
            raise
        except RuleViolationError:
            raise Failure("rule_violation", self.guard.first_violation() or "rule violation", traceback.format_exc())
        except BaseException as exc:  # noqa: BLE001 - anything the submission raises is its error
            if self.guard.violations:
                raise Failure("rule_violation", self.guard.violations[0], traceback.format_exc())
            if _is_oom(exc):
                raise Failure(
                    "memory_limit",
                    f"out of memory {what}: use a smaller batch_size/eval_batch_size or a smaller model",
                    traceback.format_exc(),
                )
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise Failure("candidate_error", f"the submission exited ({type(exc).__name__}) {what}", traceback.format_exc())
            raise Failure("candidate_error", f"{type(exc).__name__} {what}: {exc}", traceback.format_exc())
        finally:
            self.guard.phase = previous
            self.guard.model_entered = False
        # unreachable

    def after(self, what: str) -> None:
        """A violation the submission caught and swallowed still fails the run."""
        v = self.guard.first_violation()
        if v:
            raise Failure("rule_violation", v)

    # -- main ------------------------------------------------------------------------------
    def run(self) -> None:
        msg = self.reader.recv(None)
        if msg is None or msg[0].get("type") != "init":
            raise SystemExit("expected init")
        init = msg[0]
        import torch  # imported before the clock starts: the harness's cost, not the run's

        if init["spec"]["device"] == "cuda":
            # Creating the CUDA context takes seconds on a cold GPU; that is the harness's cost too.
            torch.cuda.init()
            torch.empty(1, device="cuda")

        from benchmark import Submission  # noqa: F401 - warm the public module too

        submission_path = init["submissionPath"]
        with open(submission_path, "rb") as fh:
            source_bytes = fh.read()
        self.guard.install_file_hook(init["allowedRoots"], init["deniedFiles"], init.get("deniedDirs", ()))
        self.backward = install_torch_guards(self.guard)
        self.send({"type": "ready"})
        msg = self.reader.recv(None)
        if msg is None or msg[0].get("type") != "start":
            raise SystemExit("expected start")
        clock_start = time.monotonic()
        deadline = clock_start + float(init["spec"]["trainingBudget"])
        try:
            self.train_and_evaluate(init, source_bytes, submission_path, clock_start, deadline)
        except Failure as f:
            self.send({"type": "failure", "code": f.code, "message": f.message, "detail": f.detail[-20000:]})

    def train_and_evaluate(self, init, source_bytes, submission_path, clock_start, deadline) -> None:
        import torch

        import benchmark
        from .tasks import Task

        spec = init["spec"]
        task = Task.from_json(spec["task"])
        device = spec["device"]
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()

        # 1. import submission.py as module `submission` (counts against the clock).
        module = types.ModuleType("submission")
        module.__file__ = submission_path
        sys.modules["submission"] = module
        try:
            code = compile(source_bytes.decode("utf-8"), submission_path, "exec")
        except (UnicodeDecodeError, SyntaxError) as exc:
            raise Failure("candidate_error", f"submission.py does not compile: {exc}", traceback.format_exc())
        self.call("import", exec, code, module.__dict__, what="while importing submission.py")
        self.after("import")
        sub = getattr(module, "SUBMISSION", None)
        if not isinstance(sub, benchmark.Submission):
            raise Failure(
                "candidate_error",
                "submission.py must define SUBMISSION = benchmark.Submission(build_model=..., build_optimizer=...)",
            )

        # 2. the model.
        model_spec = benchmark.ModelSpec(
            vocab_size=task.vocab_size,
            num_classes=task.num_classes,
            sequence_length=task.sequence_length,
            mask_token_id=task.mask_token_id,
            pad_token_id=task.pad_token_id,
            max_model_state_elements=int(spec["maxModelStateElements"]),
            device=device,
        )
        model = self.call("build_model", sub.build_model, model_spec, what="in build_model")
        self.after("build_model")
        if not isinstance(model, torch.nn.Module):
            raise Failure("candidate_error", f"build_model must return a torch.nn.Module, got {type(model).__name__}")
        state_elements = self.check_state(model, model_spec, "after build_model")
        guard_model(self.guard, model)

        # 3. the optimizer.
        opt_spec = benchmark.OptimizerSpec(
            training_time_seconds=float(spec["trainingBudget"]),
            device=device,
            clock_start=clock_start,
            max_steps=sub.max_steps,
        )
        bundle = self.call("build_optimizer", sub.build_optimizer, model, opt_spec, what="in build_optimizer")
        self.after("build_optimizer")
        if isinstance(bundle, torch.optim.Optimizer):
            bundle = benchmark.OptimizerBundle(bundle)
        if not isinstance(bundle, benchmark.OptimizerBundle):
            raise Failure("candidate_error", f"build_optimizer must return an OptimizerBundle, got {type(bundle).__name__}")
        self.check_optimizer_coverage(model, bundle.optimizer)
        guard_bundle(self.guard, bundle.optimizer, bundle.scheduler)

        # Fingerprints of the initial weights: every trainable parameter must change in training.
        trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        initial = {n: _fingerprint(p) for n, p in trainable}

        # 4. train.
        stats = self.train(model, bundle, sub, task, device, spec, clock_start, deadline)
        self.check_state(model, model_spec, "after training")
        unchanged = [n for n, p in trainable if _fingerprint(p) == initial[n]]
        if stats["updates"] == 0:
            raise Failure(
                "timeout",
                "no optimizer update finished before the deadline: construction/compilation took the whole "
                "allowance; build faster or compile less",
            )
        if unchanged:
            names = ", ".join(unchanged[:5]) + (" …" if len(unchanged) > 5 else "")
            raise Failure(
                "rule_violation",
                f"{len(unchanged)} trainable parameter(s) never changed during training ({names}): trainable weights "
                f"must be updated by training. Freeze them (requires_grad=False) or remove them",
            )
        self.check("weights_trained", True, f"all {len(trainable)} trainable parameters changed during training")
        stats["modelStateElements"] = state_elements
        if device == "cuda":
            stats["peakMemoryBytes"] = int(torch.cuda.max_memory_allocated())
        self.send(dict(stats, type="trained"))

        # 5. final evaluation: inputs only; the parent keeps the labels.
        msg = self.reader.recv(None)
        if msg is None or msg[0].get("type") != "eval":
            raise SystemExit("expected eval")
        header, payload = msg
        n, length = int(header["rows"]), int(header["length"])
        inputs = torch.frombuffer(bytearray(payload), dtype=torch.int32).reshape(n, length).to(torch.long)
        preds = self.evaluate(model, inputs, sub.eval_batch_size, task, device)
        self.send({"type": "predictions", "rows": n, "length": length}, _int32_bytes(preds))

    def check_state(self, model, model_spec, when: str) -> int:
        import benchmark

        try:
            total = benchmark.assert_model_state(model, model_spec)
        except benchmark.ModelStateError as exc:
            raise Failure("rule_violation", f"{when}: {exc}")
        self.check(
            "model_state",
            True,
            f"{when}: {total:,} parameter + persistent-buffer elements (ceiling {model_spec.max_model_state_elements:,}), all on {model_spec.device}",
        )
        return total

    def check_optimizer_coverage(self, model, optimizer) -> None:
        seen = {}
        for gi, group in enumerate(optimizer.param_groups):
            for p in group["params"]:
                seen[id(p)] = seen.get(id(p), 0) + 1
        names = {}
        for n, p in model.named_parameters():
            names.setdefault(id(p), n)
        missing = [n for n, p in model.named_parameters() if p.requires_grad and id(p) not in seen]
        twice = [names.get(k, "<not a model parameter>") for k, c in seen.items() if c > 1]
        foreign = [k for k in seen if k not in names]
        if missing:
            raise Failure(
                "rule_violation",
                f"{len(missing)} trainable parameter(s) are not in the optimizer ({', '.join(missing[:5])}): include "
                f"every trainable parameter exactly once, or set requires_grad=False on the ones you freeze",
            )
        if twice:
            raise Failure("rule_violation", f"parameter(s) in the optimizer more than once: {', '.join(twice[:5])}")
        if foreign:
            raise Failure(
                "rule_violation",
                f"the optimizer holds {len(foreign)} tensor(s) that are not parameters of the model: all learned "
                f"state must be model state, counted against the ceiling",
            )
        self.check("optimizer_coverage", True, f"every trainable parameter is in the optimizer exactly once")

    # -- the evaluator-owned loop ----------------------------------------------------------
    def train(self, model, bundle, sub, task, device, spec, clock_start, deadline) -> dict:
        import torch
        import torch.nn.functional as F

        import benchmark

        from .tasks import TrainStream

        stream = TrainStream(task, device)
        params = [p for p in model.parameters() if p.requires_grad]
        clip = spec.get("gradClipNorm")
        passes = bundle.backward_passes
        budget = float(spec["trainingBudget"])
        metric_every = min(1.0, max(0.05, budget / 20))
        steps = updates = tokens = examples = 0
        batch = None
        uses = 0
        last_metric = 0.0
        last_state_check = time.monotonic()
        model.train()

        def versions():
            return sum(p._version for p in params)

        while True:
            now = time.monotonic()
            if now >= deadline:
                break
            if sub.max_steps is not None and steps + passes > sub.max_steps:
                break
            if batch is None or uses == 0:
                batch = stream.next_batch(sub.batch_size)
                examples += sub.batch_size
            inputs, labels, valid = batch
            in_versions = (inputs._version, labels._version, valid._version)
            for p in params:
                p.grad = None
            v0 = versions()
            losses = []
            for i in range(passes):
                logits = self.call("forward", model, inputs, what="in the model's forward")
                self.after("forward")
                if not torch.is_tensor(logits) or tuple(logits.shape) != (inputs.shape[0], task.sequence_length, task.num_classes):
                    got = tuple(logits.shape) if torch.is_tensor(logits) else type(logits).__name__
                    raise Failure(
                        "candidate_error",
                        f"the model must return logits of shape [batch, {task.sequence_length}, {task.num_classes}], got {got}",
                    )
                if not logits.is_floating_point():
                    raise Failure("candidate_error", "the model must return floating-point logits")
                if sub.token_training_loss is not None:
                    tb = benchmark.TokenLossBatch(logits=logits, labels=labels, valid_mask=valid, input_ids=inputs)
                    loss = self.call("loss", sub.token_training_loss, tb, what="in token_training_loss")
                elif sub.training_loss is not None:
                    loss = self.call("loss", sub.training_loss, logits[valid], labels[valid], what="in training_loss")
                else:
                    loss = F.cross_entropy(logits[valid].float(), labels[valid])
                self.after("loss")
                if not torch.is_tensor(loss) or loss.dim() != 0 or not loss.requires_grad:
                    raise Failure(
                        "candidate_error",
                        "the training loss must return a 0-dim tensor attached to the model's graph "
                        "(requires_grad=True); the evaluator calls backward on it",
                    )
                if (inputs._version, labels._version, valid._version) != in_versions:
                    raise Failure(
                        "rule_violation",
                        "the submission modified the evaluator's batch in place: the evaluator owns the data "
                        "(no data augmentation); copy a tensor before changing it",
                    )
                self.call("backward", self.backward, loss, what="in backward (a backward hook or the graph)")
                self.after("backward")
                steps += 1
                tokens += int(inputs.numel())
                if versions() != v0:
                    raise Failure(
                        "rule_violation",
                        "parameters changed during the forward/loss/backward pass: only optimizer.step() and the "
                        "intermediate callback may change parameters (no hidden training in hooks)",
                    )
                detached = loss.detach()
                losses.append(detached)
                if bundle.intermediate_callback is not None:
                    ctx = benchmark.IntermediateContext(
                        model=model, optimizer=bundle.optimizer, pass_index=i, passes=passes, loss=detached, update=updates
                    )
                    self.call("intermediate", bundle.intermediate_callback, ctx, what="in the intermediate callback")
                    self.after("intermediate")
                    v0 = versions()
            grad_norm = None
            if clip is not None:
                grad_norm = torch.nn.utils.clip_grad_norm_(params, float(clip))
            self.call("step", bundle.optimizer.step, what="in optimizer.step()")
            if bundle.scheduler is not None:
                self.call("step", bundle.scheduler.step, what="in scheduler.step()")
            self.after("step")
            updates += 1
            uses += 1

            now = time.monotonic()
            if now - last_metric >= metric_every or updates == 1:
                last_metric = now
                value = float(losses[-1])
                self.last_loss = value
                self.send({"type": "metric", "name": "loss", "step": steps, "value": value, "elapsed": now - clock_start, "tokens": tokens})
            if now - last_state_check >= 5.0:
                # Offloading state mid-run (e.g. to the CPU) fails at the next periodic check.
                last_state_check = now
                self.periodic_device_check(model, device)

            # batch reuse
            reuse = False
            if uses < bundle.max_batch_reuse:
                if bundle.reuse_callback is None:
                    reuse = True
                else:
                    if grad_norm is None:
                        norms = [p.grad.detach().float().norm() for p in params if p.grad is not None]
                        grad_norm = torch.stack(norms).norm() if norms else torch.zeros(())
                    ctx = benchmark.ReuseContext(
                        update=updates,
                        step=steps,
                        uses=uses,
                        losses=tuple(float(l) for l in losses),
                        grad_norm=float(grad_norm),
                        remaining_seconds=max(0.0, deadline - time.monotonic()),
                    )
                    v_before = versions()
                    answer = self.call("reuse", bundle.reuse_callback, ctx, what="in the batch-reuse callback")
                    self.after("reuse")
                    if versions() != v_before:
                        raise Failure("rule_violation", "the batch-reuse callback changed parameters; it may only read its context")
                    if not isinstance(answer, bool):
                        raise Failure(
                            "candidate_error", f"reuse_callback must return True or False, got {type(answer).__name__}"
                        )
                    reuse = answer
            if not reuse:
                uses = 0

        if losses_nonfinite(self.last_loss):
            self.log("the last reported training loss is not finite", "warn")
        return {
            "steps": steps,
            "updates": updates,
            "tokensSeen": tokens,
            "examplesSeen": examples,
            "finalLoss": self.last_loss if math.isfinite(self.last_loss) else None,
            "childTrainingSeconds": time.monotonic() - clock_start,
        }

    def periodic_device_check(self, model, device) -> None:
        import benchmark

        for kind, name, t in benchmark._unique_state(model):
            if not benchmark._device_matches(t.device, device):
                raise Failure(
                    "rule_violation",
                    f"during training, {kind} {name} moved to {t.device}: model state must stay on {device} (no CPU offloading)",
                )

    def evaluate(self, model, inputs, eval_batch_size, task, device):
        import torch

        model.eval()
        params = [p for p in model.parameters()]
        v0 = sum(p._version for p in params)
        out = []

        def run_all():
            with torch.no_grad():
                for start in range(0, inputs.shape[0], eval_batch_size):
                    chunk = inputs[start : start + eval_batch_size].to(device)
                    self.guard.model_entered = False
                    logits = model(chunk)
                    if not torch.is_tensor(logits) or tuple(logits.shape) != (chunk.shape[0], task.sequence_length, task.num_classes):
                        raise Failure("candidate_error", "in final evaluation the model returned logits of the wrong shape")
                    out.append(logits.argmax(dim=-1).to("cpu", torch.int32))

        self.call("eval", run_all, what="during final evaluation")
        self.after("eval")
        if sum(p._version for p in params) != v0:
            raise Failure("rule_violation", "parameters changed during final evaluation: no training after the deadline")
        self.periodic_device_check(model, device)
        return torch.cat(out)


def losses_nonfinite(value: float) -> bool:
    return not math.isfinite(value)


def _fingerprint(p) -> tuple:
    import torch

    with torch.no_grad():
        d = p.detach().float()
        return (float(d.sum()), float(d.abs().sum()), float((d * d).sum()))


def _int32_bytes(t) -> bytes:
    """Little-endian int32 bytes of a CPU tensor (numpy when present, else the array module)."""
    import torch

    t = t.to("cpu", torch.int32).contiguous().reshape(-1)
    try:
        return t.numpy().astype("<i4", copy=False).tobytes()
    except Exception:
        import array

        a = array.array("i", t.tolist())
        if sys.byteorder != "little":
            a.byteswap()
        return a.tobytes()


def main(argv) -> int:
    in_fd, out_fd = int(argv[1]), int(argv[2])
    child = Child(in_fd, out_fd)
    try:
        child.run()
    except SystemExit:
        raise
    except BaseException:  # the loop itself broke, or something the submission left escaped it
        tb = traceback.format_exc()
        try:
            code = "rule_violation" if child.guard.violations else ("memory_limit" if _is_oom(sys.exc_info()[1]) else "candidate_error")
            msg = child.guard.first_violation() or "the training process failed: " + tb.strip().splitlines()[-1]
            child.send({"type": "failure", "code": code, "message": msg, "detail": tb[-20000:]})
        except Exception:
            pass
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
