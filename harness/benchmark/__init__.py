"""The public API of the `deep-recurrence` training benchmark.

A submission is one file, ``submission.py``, that imports from this module and defines
``SUBMISSION = Submission(...)``. The evaluator (trusted code) owns everything else: the data and
its order, calling the model and the loss, backward, gradient clipping, when the optimizer steps,
the deadline, the final evaluation and the score. See ``README.md`` beside this file.

Shapes (``B`` = batch size you choose, ``L`` = ``ModelSpec.sequence_length``,
``C`` = ``ModelSpec.num_classes``):

* the model is called as ``model(input_ids)`` with ``input_ids`` a ``torch.long`` tensor
  ``[B, L]`` on ``ModelSpec.device``; it must return float logits ``[B, L, C]``;
* ``input_ids`` hold the known terms of a sequence (values ``0 … C-1``), then
  ``mask_token_id`` at every position whose value the model must predict, then
  ``pad_token_id`` after the end of the example;
* predictions are the arg-max of the logits at the masked positions; the score is the percentage
  of masked positions of the hidden evaluation set predicted exactly.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

__all__ = [
    "ModelSpec",
    "OptimizerSpec",
    "OptimizerBundle",
    "Submission",
    "TokenLossBatch",
    "ReuseContext",
    "IntermediateContext",
    "ModelStateError",
    "assert_model_state",
    "count_model_state",
    "MAX_BACKWARD_PASSES",
    "MAX_BATCH_REUSE",
]

#: Most evaluator-owned backward passes one optimizer update may ask for.
MAX_BACKWARD_PASSES = 8
#: Most consecutive updates one training batch may be used for.
MAX_BATCH_REUSE = 8


@dataclass(frozen=True)
class ModelSpec:
    """What ``build_model`` receives: tensor shapes, I/O requirements and the state ceiling.

    Nothing here describes the recurrence: the model learns it from the training data.
    """

    #: Number of distinct input token ids: values ``0 … num_classes-1`` plus the mask and pad ids.
    vocab_size: int
    #: Number of output classes (the possible values of a term); logits have this last dimension.
    num_classes: int
    #: ``L``: every input row has exactly this many positions (short examples are padded).
    sequence_length: int
    #: Input id at the positions the model must predict.
    mask_token_id: int
    #: Input id after the end of an example; those positions are never scored.
    pad_token_id: int
    #: Ceiling on parameter + persistent-buffer elements (shared tensors count once).
    max_model_state_elements: int
    #: Where every parameter and buffer must live, e.g. ``"cuda"`` (``"cpu"`` on CPU test runs).
    device: str

    @property
    def input_shape(self) -> tuple:
        """``(batch, sequence_length)``; batch is ``None`` because you choose it."""
        return (None, self.sequence_length)

    @property
    def output_shape(self) -> tuple:
        """``(batch, sequence_length, num_classes)``: the logits your forward must return."""
        return (None, self.sequence_length, self.num_classes)


@dataclass(frozen=True)
class OptimizerSpec:
    """What ``build_optimizer`` receives besides the model."""

    #: Training-time allowance of this run, in seconds (per seed). The clock started before
    #: ``submission.py`` was imported: construction and compilation count against it.
    training_time_seconds: float
    #: ``"cuda"`` on the evaluation machines (``"cpu"`` on CPU test runs).
    device: str
    #: ``time.monotonic()`` at the moment the training clock started (same clock as yours).
    clock_start: float
    #: Your ``Submission.max_steps``, if you set one.
    max_steps: Optional[int] = None

    def elapsed_seconds(self) -> float:
        """Seconds of the allowance already spent (useful for time-based schedules)."""
        return time.monotonic() - self.clock_start

    def elapsed_fraction(self) -> float:
        """Fraction of the allowance already spent, clamped to ``[0, 1]``."""
        if self.training_time_seconds <= 0:
            return 1.0
        return min(1.0, max(0.0, self.elapsed_seconds() / self.training_time_seconds))


@dataclass(frozen=True)
class TokenLossBatch:
    """Boundary-preserving view of one batch for ``token_training_loss``.

    Rows stay rows: position ``[b, t]`` of every tensor belongs to example ``b``, so a loss can
    weight positions by their distance from the last known term, per example. These tensors
    belong to the evaluator: read them, never modify them in place.
    """

    #: ``[B, L, C]`` float, what your model returned (attached to the autograd graph).
    logits: Any
    #: ``[B, L]`` long; the true value at masked positions, ``-100`` elsewhere.
    labels: Any
    #: ``[B, L]`` bool; ``True`` exactly at the positions that are scored (the masked ones).
    valid_mask: Any
    #: ``[B, L]`` long, the inputs the model received.
    input_ids: Any


@dataclass(frozen=True)
class ReuseContext:
    """Detached, read-only facts given to ``OptimizerBundle.reuse_callback`` after an update.

    Plain numbers only: the callback decides from them whether the same batch is used for the
    next update, and must return ``True`` or ``False``.
    """

    #: Optimizer updates done so far (including the one just finished).
    update: int
    #: Backward passes done so far.
    step: int
    #: How many updates the current batch has been used for so far (``1`` after its first use).
    uses: int
    #: Loss of each backward pass of the update just finished.
    losses: tuple
    #: Global gradient norm before the evaluator's clipping.
    grad_norm: float
    #: Seconds left of the training allowance.
    remaining_seconds: float


@dataclass
class IntermediateContext:
    """Given to ``OptimizerBundle.intermediate_callback`` after each backward pass.

    The callback may transform gradients (``p.grad``), parameters and optimizer state, e.g. to
    perturb weights between the passes of a sharpness-aware update, or to precondition the final
    gradient. It may not call the model, a loss, ``backward``/``autograd.grad``, or step the
    optimizer or the scheduler: the evaluator does those.
    """

    model: Any
    optimizer: Any
    #: ``0 … passes-1``: which backward pass just finished.
    pass_index: int
    #: ``OptimizerBundle.backward_passes``.
    passes: int
    #: Loss of the pass that just finished (a detached 0-dim tensor: call ``.item()`` if needed).
    loss: Any
    #: Optimizer updates done before this one.
    update: int


@dataclass
class OptimizerBundle:
    """What ``build_optimizer`` returns.

    Each update, the evaluator: zeroes the gradients; runs ``backward_passes`` forward/loss/backward
    passes on the same batch (gradients accumulate, as in PyTorch), calling
    ``intermediate_callback`` after each pass; clips the global gradient norm; calls
    ``optimizer.step()`` and then ``scheduler.step()``. The batch is used again for the next update
    while ``reuse_callback`` returns ``True``, at most ``max_batch_reuse`` updates in all.
    """

    optimizer: Any
    scheduler: Any = None
    #: Evaluator-owned backward passes per update, ``1 … 8``.
    backward_passes: int = 1
    #: Most updates one batch may serve, ``1 … 8`` (``1`` = every update gets a fresh batch).
    max_batch_reuse: int = 1
    #: ``(ReuseContext) -> bool``. Without it, a batch serves ``max_batch_reuse`` updates.
    reuse_callback: Optional[Callable[[ReuseContext], bool]] = None
    #: ``(IntermediateContext) -> None``; the one callback that may change grads/params/state.
    intermediate_callback: Optional[Callable[[IntermediateContext], None]] = None

    def __post_init__(self) -> None:
        if not hasattr(self.optimizer, "step") or not hasattr(self.optimizer, "param_groups"):
            raise TypeError("OptimizerBundle.optimizer must be a torch.optim.Optimizer (it needs step() and param_groups)")
        if self.scheduler is not None and not callable(getattr(self.scheduler, "step", None)):
            raise TypeError("OptimizerBundle.scheduler must have a step() method, or be None")
        for name, limit in (("backward_passes", MAX_BACKWARD_PASSES), ("max_batch_reuse", MAX_BATCH_REUSE)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
                raise ValueError(f"OptimizerBundle.{name} must be an integer from 1 to {limit}, got {value!r}")
        for name in ("reuse_callback", "intermediate_callback"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"OptimizerBundle.{name} must be callable or None")


@dataclass
class Submission:
    """``SUBMISSION = Submission(...)`` at module level of ``submission.py``.

    * ``build_model(spec: ModelSpec) -> torch.nn.Module``: randomly initialised, on ``spec.device``.
    * ``build_optimizer(model, spec: OptimizerSpec) -> OptimizerBundle`` (a bare optimizer is
      accepted too): every trainable parameter exactly once.
    * ``training_loss(logits, labels) -> scalar`` (legacy): flattened ``[N, C]`` logits and ``[N]``
      labels of the scored positions only; or ``token_training_loss(TokenLossBatch) -> scalar``.
      Give at most one; without either the evaluator uses mean cross-entropy over scored positions.
    * ``batch_size``: training rows per batch; ``eval_batch_size``: rows per final-evaluation call.
    * ``max_steps``: optional cap on backward passes (lower than the clock would allow).
    """

    build_model: Callable[[ModelSpec], Any]
    build_optimizer: Callable[[Any, OptimizerSpec], Any]
    training_loss: Optional[Callable[[Any, Any], Any]] = None
    token_training_loss: Optional[Callable[[TokenLossBatch], Any]] = None
    batch_size: int = 256
    eval_batch_size: Optional[int] = None
    max_steps: Optional[int] = None
    #: Free-form notes shown to organizers (e.g. what the model does); never scored.
    notes: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        if not callable(self.build_model) or not callable(self.build_optimizer):
            raise TypeError("Submission needs callables build_model(spec) and build_optimizer(model, spec)")
        if self.training_loss is not None and self.token_training_loss is not None:
            raise ValueError("give either training_loss (flattened, legacy) or token_training_loss, not both")
        for name in ("training_loss", "token_training_loss"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise TypeError(f"Submission.{name} must be callable or None")
        for name in ("batch_size", "eval_batch_size", "max_steps"):
            value = getattr(self, name)
            if value is None and name != "batch_size":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Submission.{name} must be a positive integer, got {value!r}")
        if self.eval_batch_size is None:
            self.eval_batch_size = self.batch_size


class ModelStateError(ValueError):
    """Raised by ``assert_model_state`` when a model breaks the state ceiling or device rule."""


def _unique_state(model: Any) -> list:
    """Parameters and persistent buffers, each tensor once (shared weights count once)."""
    seen: set = set()
    out = []
    # Walk modules by hand: named_parameters(remove_duplicate=...) does not exist in torch 1.13.
    for module_name, module in model.named_modules(remove_duplicate=False):
        for p_name, p in module._parameters.items():
            if p is None:
                continue
            key = _storage_key(p)
            if key not in seen:
                seen.add(key)
                out.append(("parameter", f"{module_name}.{p_name}" if module_name else p_name, p))
    for module_name, module in model.named_modules(remove_duplicate=False):
        non_persistent = getattr(module, "_non_persistent_buffers_set", set())
        for buf_name, b in module._buffers.items():
            if b is None or buf_name in non_persistent:
                continue
            key = _storage_key(b)
            if key not in seen:
                seen.add(key)
                out.append(("buffer", f"{module_name}.{buf_name}" if module_name else buf_name, b))
    return out


def _storage_key(t: Any) -> tuple:
    # The same tensor object, or two views of one storage region (tied weights), count once.
    try:
        if t.device.type == "meta":
            return ("id", id(t))
        return ("ptr", t.device.type, t.device.index, t.data_ptr(), tuple(t.shape), tuple(t.stride()))
    except Exception:
        return ("id", id(t))


def count_model_state(model: Any) -> int:
    """Parameter plus persistent-buffer elements of ``model``, shared tensors counted once."""
    return sum(int(t.numel()) for _, _, t in _unique_state(model))


def _device_matches(actual: Any, wanted: str) -> bool:
    import torch

    want = torch.device(wanted)
    if actual.type != want.type:
        return False
    if want.type == "cuda":
        index = want.index if want.index is not None else torch.cuda.current_device()
        return actual.index in (None, index)
    return True


def assert_model_state(model: Any, spec: ModelSpec) -> int:
    """Check ``model`` against the rules the evaluator enforces on persistent state.

    Raises ``ModelStateError`` if the model holds more than ``spec.max_model_state_elements``
    parameter + persistent-buffer elements, or if any of them is not on ``spec.device``.
    Returns the element count. The evaluator runs the same check itself after ``build_model``
    and again after training; calling it in your code just fails earlier with the same message.
    """
    state = _unique_state(model)
    total = sum(int(t.numel()) for _, _, t in state)
    if total > spec.max_model_state_elements:
        biggest = sorted(state, key=lambda s: -int(s[2].numel()))[:3]
        listing = ", ".join(f"{kind} {name} ({int(t.numel()):,})" for kind, name, t in biggest)
        raise ModelStateError(
            f"the model holds {total:,} parameter and persistent-buffer elements, over the ceiling of "
            f"{spec.max_model_state_elements:,} (largest: {listing}). Shrink the model or share weights "
            f"(a tensor used in several places counts once)."
        )
    for kind, name, t in state:
        if not _device_matches(t.device, spec.device):
            raise ModelStateError(
                f"{kind} {name} is on {t.device}, but all model state must stay on {spec.device} "
                f"(CPU offloading is not allowed). Create the model with device=spec.device or call .to(spec.device)."
            )
    return total
