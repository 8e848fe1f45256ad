"""Validation of the decode spec, mirroring `DecodeSpec` in libs/src/harness/spec.ts.

The hub writes the spec; a malformed one is the hub's fault, so errors here become harness_error
(raised as ValueError) with a message that names the field.
"""
from __future__ import annotations

import re
from typing import Any

MEMORY_MEASURES = ("auto", "gpu", "rss", "none")
REMEASURE_MIN_SAMPLES = 10


def _num(obj: dict, key: str, where: str, *, integer=False, positive=False, nonneg=False, nullable=False):
    if key not in obj:
        if nullable:
            return None
        raise ValueError(f"spec: {where}.{key} is missing")
    v = obj[key]
    if v is None and nullable:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not float(v).is_integer()):
        raise ValueError(f"spec: {where}.{key} must be a{'n integer' if integer else ' number'}, got {v!r}")
    if positive and not v > 0:
        raise ValueError(f"spec: {where}.{key} must be positive, got {v!r}")
    if nonneg and v < 0:
        raise ValueError(f"spec: {where}.{key} must be non-negative, got {v!r}")
    return int(v) if integer else float(v)


def _obj(obj: Any, key: str, where: str) -> dict:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, dict):
        raise ValueError(f"spec: {where}.{key} must be an object")
    return v


def validate_decode_spec(spec: dict) -> dict:
    if not isinstance(spec, dict) or spec.get("kind") != "decode":
        raise ValueError("spec: kind must be 'decode'")
    if spec.get("mode") not in ("public", "official", "baseline"):
        raise ValueError("spec: mode must be 'public', 'official' or 'baseline'")
    model = _obj(spec, "model", "spec")
    if model.get("family") not in ("toy", "qwen3") or not isinstance(model.get("path"), str):
        raise ValueError("spec: model must be {family: 'toy'|'qwen3', path: string}")
    if not isinstance(spec.get("baselineEngine"), str):
        raise ValueError("spec: baselineEngine must be a directory path")
    workloads = spec.get("workloads")
    if not isinstance(workloads, list) or not workloads:
        raise ValueError("spec: workloads must be a non-empty list")
    names = set()
    for i, w in enumerate(workloads):
        where = f"workloads[{i}]"
        if not isinstance(w, dict) or not isinstance(w.get("name"), str) or not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", w["name"]):
            raise ValueError(f"spec: {where}.name must match [a-z0-9][a-z0-9_-]*")
        if w["name"] in names:
            raise ValueError(f"spec: workload name {w['name']!r} appears twice")
        names.add(w["name"])
        for key in ("batchSize", "promptLength", "maxNewTokens"):
            _num(w, key, where, integer=True, positive=True)
        _num(w, "seed", where, integer=True, nonneg=True)
    _num(spec, "samplesPerWorkload", "spec", integer=True, positive=True)
    # A baseline re-measure writes the hub's cache: never from fewer samples than the hub asks for
    # at least (REMEASURE_MIN_SAMPLES in libs/src/rest/organizer.ts).
    if spec["mode"] == "baseline" and spec["samplesPerWorkload"] < REMEASURE_MIN_SAMPLES:
        raise ValueError(f"spec: a baseline re-measure needs samplesPerWorkload >= {REMEASURE_MIN_SAMPLES}, got {spec['samplesPerWorkload']}")
    _num(spec, "warmupSamples", "spec", integer=True, nonneg=True)
    # Official runs: add pairs up to maxPairs while the score's 95 % interval is wider than
    # ±targetHalfWidthPct (both optional: without them an official run takes samplesPerWorkload pairs).
    max_pairs = _num(spec, "maxPairs", "spec", integer=True, positive=True, nullable=True)
    if max_pairs is not None and max_pairs < spec["samplesPerWorkload"]:
        raise ValueError(f"spec: maxPairs ({max_pairs}) must be at least samplesPerWorkload ({spec['samplesPerWorkload']})")
    spec.setdefault("maxPairs", None)
    _num(spec, "targetHalfWidthPct", "spec", positive=True, nullable=True)
    spec.setdefault("targetHalfWidthPct", None)
    # Official runs: the run-to-run spread the reported interval adds in quadrature (pairing.widen).
    _num(spec, "runSpreadPct", "spec", nonneg=True, nullable=True)
    spec.setdefault("runSpreadPct", None)
    limits = _obj(spec, "limits", "spec")
    for key in ("loadSeconds", "sampleSeconds", "runSeconds"):
        _num(limits, key, "limits", positive=True)
    _num(limits, "memoryBytes", "limits", positive=True, nullable=True)
    limits.setdefault("memoryBytes", None)
    measure = limits.setdefault("memoryMeasure", "auto")
    if measure not in MEMORY_MEASURES:
        raise ValueError(f"spec: limits.memoryMeasure must be one of {MEMORY_MEASURES}")
    checks = _obj(spec, "checks", "spec")
    _num(checks, "maxTtftMs", "checks", positive=True, nullable=True)
    _num(checks, "maxTpotMs", "checks", positive=True, nullable=True)
    checks.setdefault("maxTtftMs", None)
    checks.setdefault("maxTpotMs", None)
    _num(checks, "maxRatioSpreadPct", "checks", positive=True)
    _num(checks, "logitTolerance", "checks", nonneg=True)
    baseline = spec.get("baseline")
    if baseline is not None:
        if not isinstance(baseline, dict) or not isinstance(baseline.get("workloads"), dict):
            raise ValueError("spec: baseline must be null or {hardware, workloads}")
        for name, fig in baseline["workloads"].items():
            _num(fig, "totalMs", f"baseline.workloads.{name}", positive=True)
    return spec
