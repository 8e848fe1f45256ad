"""Rule enforcement inside the child: an audit hook on file access and guards on training calls.

The evaluator loop runs in the same process as the submission (the model must run where the loop
runs), so these guards catch rule-breaking done the ordinary way: ``torch.load``, opening a file
shipped beside ``submission.py``, calling ``backward`` or ``optimizer.step()`` from a hook or a
callback, calling the model from a callback. They are not a wall against a participant who
attacks the evaluator's own objects in memory; the README's threat model says what the parent
enforces by mechanism and what is left to organizers.

Every violation is recorded before the exception is raised, so a submission that catches the
exception still fails the run.
"""
from __future__ import annotations

import functools
import os
import re
import sys
from typing import Iterable, List, Optional

PHASE_WORDS = {
    "import": "while submission.py was being imported",
    "build_model": "in build_model",
    "build_optimizer": "in build_optimizer",
    "forward": "in the model's forward or a forward hook",
    "loss": "in the training loss",
    "backward": "in a backward/gradient hook (during the evaluator's backward)",
    "intermediate": "in the intermediate callback",
    "clip": "during the evaluator's gradient clipping",
    "step": "in optimizer.step() or scheduler.step()",
    "reuse": "in the batch-reuse callback",
    "eval": "during final evaluation",
    "evaluator": "outside any evaluator call (a thread or a leftover hook)",
}


class RuleViolationError(PermissionError):
    """Raised where a rule is broken; the run fails with failureCode rule_violation."""


class Guard:
    def __init__(self) -> None:
        self.phase = "evaluator"
        self.violations: List[str] = []
        self.model_entered = False  # the evaluator's current model call has started
        self._in_hook = False
        self._denied_files: set = set()
        self._denied_dirs: tuple = ()
        self._allowed_roots: tuple = ()
        self._pid = os.getpid()

    # -- recording -------------------------------------------------------------------------
    def violation(self, message: str) -> RuleViolationError:
        where = PHASE_WORDS.get(self.phase, self.phase)
        text = f"{message} ({where})"
        self.violations.append(text)
        return RuleViolationError(text)

    def first_violation(self) -> Optional[str]:
        return self.violations[0] if self.violations else None

    # -- files -----------------------------------------------------------------------------
    def install_file_hook(
        self,
        allowed_roots: Iterable[str],
        denied_files: Iterable[str],
        denied_dirs: Iterable[str] = (),
    ) -> None:
        """Refuse opening pre-existing submission files (other than submission.py), the spec,
        other processes' /proc entries, and anything outside the allowed roots.

        An audit hook cannot be removed once added, so participant code cannot switch it off.
        """
        self._allowed_roots = tuple(sorted({_norm(r) for r in allowed_roots if r}))
        self._denied_files = {_norm(f) for f in denied_files if f}
        self._denied_dirs = tuple(_norm(d) for d in denied_dirs if d)
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        if event != "open" or self._in_hook:
            return
        path = args[0] if args else None
        if path is None or isinstance(path, int):
            return  # an already-open descriptor
        self._in_hook = True
        try:
            try:
                text = os.fsdecode(os.fspath(path))
            except TypeError:
                return
            reason = self._refuse(text)
        finally:
            self._in_hook = False
        if reason:
            raise self.violation(
                f"opening {text!r} is not allowed: {reason}. Weights must come from random initialisation "
                f"and training on the evaluator's data; submission.py is the only file you ship"
            )

    def _refuse(self, text: str) -> Optional[str]:
        full = _norm(text)
        m = re.match(r"^/proc/(\d+)(/|$)", full)
        if m and int(m.group(1)) != self._pid:
            return "another process's /proc entry"
        if full in self._denied_files:
            return "it is an evaluator or submission file, not something training may read"
        for d in self._denied_dirs:
            if full == d or full.startswith(d + os.sep):
                return "it is in a directory the evaluator keeps private"
        for root in self._allowed_roots:
            if full == root or full.startswith(root.rstrip(os.sep) + os.sep):
                return None
        return "it is outside the system, library and scratch locations a run may use"


def _norm(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def caller_is_torch(depth: int = 2) -> bool:
    """True when the function ``depth`` frames up is PyTorch itself (e.g. reentrant
    checkpointing calls autograd.backward inside backward, which is not hidden training)."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return False
    name = frame.f_globals.get("__name__", "") or ""
    return name == "torch" or name.startswith("torch.")


def install_torch_guards(guard: Guard):
    """Patch the derivative-engine entry points and loaders; return the evaluator's own backward."""
    import torch
    import torch.autograd

    original_backward = torch.autograd.backward
    original_grad = torch.autograd.grad

    def guarded_backward(*args, **kwargs):
        if caller_is_torch():
            return original_backward(*args, **kwargs)
        raise guard.violation(
            "backward() was called by the submission: the evaluator runs every backward pass itself "
            "(ask for more with OptimizerBundle.backward_passes)"
        )

    def guarded_tensor_backward(self, *args, **kwargs):
        if caller_is_torch():
            return original_backward(self, *args, **kwargs)
        raise guard.violation(
            "Tensor.backward() was called by the submission: the evaluator runs every backward pass "
            "itself (ask for more with OptimizerBundle.backward_passes)"
        )

    def guarded_grad(*args, **kwargs):
        # autograd.grad inside the model's own forward (or loss) is part of the computation the
        # evaluator asked for; anywhere else it would be gradient work the evaluator does not own.
        if guard.phase in ("forward", "loss", "build_model") or caller_is_torch():
            return original_grad(*args, **kwargs)
        raise guard.violation("torch.autograd.grad() was called outside the model's forward and the loss")

    torch.autograd.backward = guarded_backward
    torch.Tensor.backward = guarded_tensor_backward
    torch.autograd.grad = guarded_grad

    def refuse_loader(name):
        def refused(*args, **kwargs):
            if caller_is_torch():
                return loaders[name](*args, **kwargs)
            raise guard.violation(
                f"{name} is not allowed: trainable weights must be randomly initialised and learned in this run"
            )

        return refused

    loaders = {}
    for owner, attr, name in (
        (torch, "load", "torch.load"),
        (torch.serialization, "load", "torch.load"),
        (torch.jit, "load", "torch.jit.load"),
        (torch.hub, "load", "torch.hub.load"),
        (torch.hub, "load_state_dict_from_url", "torch.hub.load_state_dict_from_url"),
    ):
        if hasattr(owner, attr):
            loaders.setdefault(name, getattr(owner, attr))
            setattr(owner, attr, refuse_loader(name))

    # torch >= 2.0: a global hook on every optimizer's step catches a second, hidden optimizer.
    register = getattr(getattr(torch.optim, "optimizer", None), "register_optimizer_step_pre_hook", None)
    if register is not None:

        def any_optimizer_step(optimizer, args, kwargs):
            if guard.phase != "step":
                raise guard.violation("an optimizer step ran outside the evaluator's optimizer cadence")

        register(any_optimizer_step)
    return original_backward


def guard_bundle(guard: Guard, optimizer, scheduler) -> None:
    """Refuse optimizer/scheduler steps not made by the evaluator (e.g. from a hook)."""

    def wrap(obj, what: str):
        inner = obj.step

        # functools.wraps keeps markers such as the LR scheduler's `_with_counter` (no spurious warning).
        @functools.wraps(inner)
        def step(*args, **kwargs):
            if guard.phase != "step":
                raise guard.violation(f"{what}.step() was called by the submission; the evaluator steps it once per update")
            return inner(*args, **kwargs)

        obj.step = step

    wrap(optimizer, "optimizer")
    if scheduler is not None:
        wrap(scheduler, "scheduler")


def guard_model(guard: Guard, model) -> None:
    """A pre-hook on the top-level model: only the evaluator calls it, once per pass."""

    def pre_hook(module, inputs):
        if guard.phase in ("build_model", "build_optimizer", "import"):
            return None  # warm-up or shape checks during construction are the participant's time
        if guard.phase in ("forward", "eval"):
            if guard.model_entered:
                raise guard.violation("the model was called again inside its own evaluator call (nested model call)")
            guard.model_entered = True
            return None
        raise guard.violation("the model was called by the submission; only the evaluator calls the model")

    model.register_forward_pre_hook(pre_hook)
