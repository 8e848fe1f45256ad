"""The Python reading of `TrainingSpec` (libs/src/harness/spec.ts): defaults and validation.

The zod schema is the contract; this module applies the same defaults and refuses a spec the
schema would refuse, so a hand-written spec (tests, the GPU machine) fails early and clearly.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from .tasks import RECURRENCES, Task, RecurrenceDef


class SpecError(ValueError):
    pass


def _num(obj: dict, key: str, *, positive: bool = True, integer: bool = False, default: Any = None) -> Any:
    value = obj.get(key, default)
    if value is None:
        raise SpecError(f"spec field {key!r} is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(f"spec field {key!r} must be a number, got {value!r}")
    if integer and int(value) != value:
        raise SpecError(f"spec field {key!r} must be an integer, got {value!r}")
    if positive and value <= 0:
        raise SpecError(f"spec field {key!r} must be positive, got {value!r}")
    return int(value) if integer else float(value)


@dataclass(frozen=True)
class TrainingSpec:
    benchmark: str
    mode: str
    tier: str
    dataset: Optional[str]
    training_seconds: float  # unscaled, as in the definition
    eval_seconds: float
    time_scale: float
    max_model_state_elements: int
    device: str
    grad_clip_norm: Optional[float]
    task: Task
    eval_seed: int
    eval_examples: int

    @property
    def training_budget(self) -> float:
        """Seconds of training allowance for this run (scaled for tests)."""
        return self.training_seconds * self.time_scale

    @property
    def eval_budget(self) -> float:
        return self.eval_seconds * self.time_scale

    @property
    def grace_seconds(self) -> float:
        """How far past the allowance the last update may end before the run is a timeout.

        The loop checks the clock before each update, so the last one can overrun by its own
        length; the grace covers a normal update, not a stalled one.
        """
        return min(30.0, max(1.0, 0.05 * self.training_budget))


def parse_training_spec(raw: dict) -> TrainingSpec:
    if not isinstance(raw, dict) or raw.get("kind") != "training":
        raise SpecError("not a training spec (kind must be 'training')")
    device = raw.get("device")
    if device not in ("cuda", "cpu"):
        raise SpecError(f"spec device must be 'cuda' or 'cpu', got {device!r}")
    clip = raw.get("gradClipNorm", 1.0)
    if clip is not None:
        clip = _num(raw, "gradClipNorm")
    task_raw = raw.get("task")
    if not isinstance(task_raw, dict):
        raise SpecError("spec field 'task' is required")
    modulus = _num(task_raw, "modulus", integer=True)
    if not 3 <= modulus <= 65521:
        raise SpecError("task.modulus must be between 3 and 65521")
    recs_raw = task_raw.get("recurrences")
    if not isinstance(recs_raw, list) or not recs_raw:
        raise SpecError("task.recurrences must be a non-empty list")
    recs = []
    for i, r in enumerate(recs_raw):
        if not isinstance(r, dict) or r.get("kind") not in RECURRENCES:
            raise SpecError(f"task.recurrences[{i}].kind must be one of {sorted(RECURRENCES)}")
        params = r.get("params") or {}
        if not isinstance(params, dict) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in params.values()
        ):
            raise SpecError(f"task.recurrences[{i}].params must map names to numbers")
        weight = float(r.get("weight", 1))
        if weight <= 0:
            raise SpecError(f"task.recurrences[{i}].weight must be positive")
        try:
            recs.append(RecurrenceDef.make(r["kind"], params, weight, modulus))
        except ValueError as exc:
            raise SpecError(f"task.recurrences[{i}]: {exc}") from None
    length = _num(task_raw, "sequenceLength", integer=True)
    ctx = task_raw.get("contextLength") or {}
    cmin = _num(ctx, "min", integer=True)
    cmax = _num(ctx, "max", integer=True)
    min_length = _num(task_raw, "minLength", integer=True, default=length)
    order = max(r.order for r in recs)
    if not (order <= cmin <= cmax < length):
        raise SpecError(
            f"task.contextLength must satisfy {order} (largest recurrence order) <= min <= max < sequenceLength"
        )
    if not (cmax < min_length <= length):
        raise SpecError("task.minLength must be above contextLength.max and at most sequenceLength")
    task = Task(
        modulus=modulus,
        recurrences=tuple(recs),
        sequence_length=length,
        context_min=cmin,
        context_max=cmax,
        min_length=min_length,
        train_seed=_num(task_raw, "trainSeed", positive=False, integer=True),
    )
    return TrainingSpec(
        benchmark=str(raw.get("benchmark", "")),
        mode=str(raw.get("mode", "public")),
        tier=str(raw.get("tier", "")),
        dataset=raw.get("dataset"),
        training_seconds=_num(raw, "trainingSeconds"),
        eval_seconds=_num(raw, "evalSeconds"),
        time_scale=_num(raw, "timeScale", default=1),
        max_model_state_elements=_num(raw, "maxModelStateElements", integer=True),
        device=device,
        grad_clip_norm=clip,
        task=task,
        eval_seed=_num(task_raw, "evalSeed", positive=False, integer=True),
        eval_examples=_num(task_raw, "evalExamples", integer=True),
    )


def child_view(spec: TrainingSpec) -> dict:
    """What the untrusted child may know: never the eval seed or the eval set's size."""
    return {
        "trainingBudget": spec.training_budget,
        "device": spec.device,
        "gradClipNorm": spec.grad_clip_norm,
        "maxModelStateElements": spec.max_model_state_elements,
        "task": spec.task.to_json(),
    }
