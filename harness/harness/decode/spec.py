"""The Python reading of `DecodeSpec` (libs/src/harness/spec.ts): parsed and validated once.

The hub writes the spec (JSON, camelCase keys, unchanged by this module); `parse_decode_spec`
checks it and turns it into frozen dataclasses with snake_case attributes, which the runner, its
checks and its verdict read. A malformed spec is the hub's fault, so errors here become
harness_error (raised as ValueError) with a message that names the field. Paths come out absolute:
each engine runs with its own folder as cwd.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping, Optional

MEMORY_MEASURES = ("auto", "gpu", "rss", "none")
MODES = ("public", "official", "baseline", "calibration")
NONCE = re.compile(r"[0-9a-f]{32}")
WORKLOAD_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
# A baseline re-measure writes the hub's cache: never from fewer samples than the hub asks for at
# least (REMEASURE_MIN_SAMPLES in libs/src/rest/organizer.ts).
REMEASURE_MIN_SAMPLES = 10


@dataclass(frozen=True)
class Model:
    family: str  # "toy" | "qwen3"
    path: str


@dataclass(frozen=True)
class Workload:
    name: str
    batch_size: int
    prompt_length: int
    max_new_tokens: int
    seed: int
    # One of the benchmark's hidden workloads: its prompt seed is mixed with the run's secret nonce.
    hidden: bool

    @property
    def tokens(self) -> int:
        """Tokens one sample generates (the batch × the new tokens of each sequence)."""
        return self.batch_size * self.max_new_tokens


@dataclass(frozen=True)
class Limits:
    load_seconds: float
    sample_seconds: float
    run_seconds: float
    memory_bytes: Optional[float]  # None: not checked
    memory_measure: str  # one of MEMORY_MEASURES


@dataclass(frozen=True)
class Checks:
    max_ttft_ms: Optional[float]
    max_tpot_ms: Optional[float]
    max_ratio_spread_pct: float
    logit_tolerance: float


@dataclass(frozen=True)
class KFigure:
    """K = baseline time ÷ reference time for one workload, and its 95 % interval."""
    k: float
    low: float
    high: float


@dataclass(frozen=True)
class Calibration:
    """The hub's K for one hardware key (`CalibrationK`)."""
    hardware: Optional[str]
    pairs: Optional[int]
    runs: Optional[int]
    workloads: Mapping[str, KFigure]


@dataclass(frozen=True)
class CalibrateSettings:
    """Mode "calibration" only: how long to calibrate."""
    target_half_width_pct: float
    max_pairs: int
    budget_seconds: float


@dataclass(frozen=True)
class CachedBaseline:
    """The hub's cached baseline medians for this hardware (`BaselineFigures`): totalMs per workload."""
    hardware: Optional[str]
    total_ms: Mapping[str, float]


@dataclass(frozen=True)
class DecodeSpec:
    benchmark: str
    mode: str  # one of MODES
    model: Model
    baseline_engine: str
    # The trusted reference engine (harness/reference/...): official and public runs pair with it
    # where the hub has a K for this hardware; a calibration run measures it against the baseline.
    reference_engine: Optional[str]
    workloads: tuple  # of Workload
    samples_per_workload: int
    warmup_samples: int
    # Official runs: add pairs up to max_pairs while the score's 95 % interval is wider than
    # ±target_half_width_pct (both optional: without them an official run takes samplesPerWorkload pairs).
    max_pairs: Optional[int]
    target_half_width_pct: Optional[float]
    # Official runs: the run-to-run spread the reported interval adds in quadrature (pairing.widen).
    run_spread_pct: Optional[float]
    # The reference engine's samples stop after this percent of each workload's new tokens (its
    # clock: K = baseline ÷ this shorter time, calibrated the same way); 100: whole samples.
    reference_tokens_pct: float
    limits: Limits
    checks: Checks
    prompt_nonce: Optional[str]
    calibration: Optional[Calibration]
    calibrate: Optional[CalibrateSettings]
    baseline: Optional[CachedBaseline]

    @property
    def official(self) -> bool:
        return self.mode == "official"

    @property
    def bootstrap_seed(self) -> str:
        """The bootstrap's seed for this run: the same ratios always give the same interval."""
        return f"{self.benchmark}:{','.join(w.name for w in self.workloads)}"


def _num(obj: dict, key: str, where: str, *, integer=False, positive=False, nonneg=False, nullable=False):
    """The number at obj[key], checked. Integers come back as int; other numbers as given (an int
    stays an int), so every figure reads and prints as the hub wrote it."""
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
    return int(v) if integer else v


def _obj(obj: Any, key: str, where: str) -> dict:
    v = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(v, dict):
        raise ValueError(f"spec: {where}.{key} must be an object")
    return v


def _workloads(raw: Any) -> tuple:
    if not isinstance(raw, list) or not raw:
        raise ValueError("spec: workloads must be a non-empty list")
    out = []
    names = set()
    for i, w in enumerate(raw):
        where = f"workloads[{i}]"
        if not isinstance(w, dict) or not isinstance(w.get("name"), str) or not WORKLOAD_NAME.fullmatch(w["name"]):
            raise ValueError(f"spec: {where}.name must match [a-z0-9][a-z0-9_-]*")
        if w["name"] in names:
            raise ValueError(f"spec: workload name {w['name']!r} appears twice")
        names.add(w["name"])
        sizes = [_num(w, key, where, integer=True, positive=True) for key in ("batchSize", "promptLength", "maxNewTokens")]
        seed = _num(w, "seed", where, integer=True, nonneg=True)
        hidden = w.get("hidden", False)
        if not isinstance(hidden, bool):
            raise ValueError(f"spec: {where}.hidden must be true or false")
        out.append(Workload(w["name"], *sizes, seed=seed, hidden=hidden))
    return tuple(out)


def _limits(spec: dict) -> Limits:
    limits = _obj(spec, "limits", "spec")
    load, sample, run = (_num(limits, key, "limits", positive=True) for key in ("loadSeconds", "sampleSeconds", "runSeconds"))
    memory = _num(limits, "memoryBytes", "limits", positive=True, nullable=True)
    measure = limits.get("memoryMeasure", "auto")
    if measure not in MEMORY_MEASURES:
        raise ValueError(f"spec: limits.memoryMeasure must be one of {MEMORY_MEASURES}")
    return Limits(load, sample, run, memory, measure)


def _checks(spec: dict) -> Checks:
    checks = _obj(spec, "checks", "spec")
    ttft = _num(checks, "maxTtftMs", "checks", positive=True, nullable=True)
    tpot = _num(checks, "maxTpotMs", "checks", positive=True, nullable=True)
    spread = _num(checks, "maxRatioSpreadPct", "checks", positive=True)
    tolerance = _num(checks, "logitTolerance", "checks", nonneg=True)
    return Checks(ttft, tpot, spread, tolerance)


def _calibration(raw: Any) -> Optional[Calibration]:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("workloads"), dict):
        raise ValueError("spec: calibration must be null or {hardware, halfWidthPct, workloads: {name: {k, low, high}}}")
    figures = {}
    for name, fig in raw["workloads"].items():
        where = f"calibration.workloads.{name}"
        k = _num(fig, "k", where, positive=True)
        low = _num(fig, "low", where, positive=True)
        high = _num(fig, "high", where, positive=True)
        if not low <= k <= high:
            raise ValueError(f"spec: {where} needs low <= k <= high, got {float(low)}, {float(k)}, {float(high)}")
        figures[name] = KFigure(k, low, high)
    return Calibration(raw.get("hardware"), raw.get("pairs"), raw.get("runs"), MappingProxyType(figures))


def _calibrate(raw: Any, mode: str, samples: int) -> Optional[CalibrateSettings]:
    if mode != "calibration":
        return None  # read by calibration runs only
    if not isinstance(raw, dict):
        raise ValueError("spec: a calibration run needs calibrate: {targetHalfWidthPct, maxPairs, budgetSeconds}")
    settings = CalibrateSettings(
        _num(raw, "targetHalfWidthPct", "calibrate", positive=True),
        _num(raw, "maxPairs", "calibrate", integer=True, positive=True),
        _num(raw, "budgetSeconds", "calibrate", positive=True),
    )
    if settings.max_pairs < samples:
        raise ValueError(f"spec: calibrate.maxPairs ({settings.max_pairs}) must be at least samplesPerWorkload ({samples})")
    return settings


def _baseline(raw: Any) -> Optional[CachedBaseline]:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not isinstance(raw.get("workloads"), dict):
        raise ValueError("spec: baseline must be null or {hardware, workloads}")
    totals = {name: _num(fig, "totalMs", f"baseline.workloads.{name}", positive=True) for name, fig in raw["workloads"].items()}
    return CachedBaseline(raw.get("hardware"), MappingProxyType(totals))


def parse_decode_spec(spec: dict) -> DecodeSpec:
    """The spec the agent wrote (its JSON, as read), checked in the order of the fields; the first
    problem is the error."""
    if not isinstance(spec, dict) or spec.get("kind") != "decode":
        raise ValueError("spec: kind must be 'decode'")
    mode = spec.get("mode")
    if mode not in MODES:
        raise ValueError("spec: mode must be 'public', 'official', 'baseline' or 'calibration'")
    model = _obj(spec, "model", "spec")
    if model.get("family") not in ("toy", "qwen3") or not isinstance(model.get("path"), str):
        raise ValueError("spec: model must be {family: 'toy'|'qwen3', path: string}")
    if not isinstance(spec.get("baselineEngine"), str):
        raise ValueError("spec: baselineEngine must be a directory path")
    reference = spec.get("referenceEngine")
    if reference is not None and not isinstance(reference, str):
        raise ValueError("spec: referenceEngine must be null or a directory path")
    if mode == "calibration" and reference is None:
        raise ValueError("spec: a calibration run needs referenceEngine")
    workloads = _workloads(spec.get("workloads"))
    samples = _num(spec, "samplesPerWorkload", "spec", integer=True, positive=True)
    if mode == "baseline" and samples < REMEASURE_MIN_SAMPLES:
        raise ValueError(f"spec: a baseline re-measure needs samplesPerWorkload >= {REMEASURE_MIN_SAMPLES}, got {samples}")
    warmup = _num(spec, "warmupSamples", "spec", integer=True, nonneg=True)
    max_pairs = _num(spec, "maxPairs", "spec", integer=True, positive=True, nullable=True)
    if max_pairs is not None and max_pairs < samples:
        raise ValueError(f"spec: maxPairs ({max_pairs}) must be at least samplesPerWorkload ({samples})")
    target = _num(spec, "targetHalfWidthPct", "spec", positive=True, nullable=True)
    run_spread = _num(spec, "runSpreadPct", "spec", nonneg=True, nullable=True)
    reference_pct = _num(spec, "referenceTokensPct", "spec", positive=True, nullable=True)
    if reference_pct is not None and reference_pct > 100:
        raise ValueError(f"spec: referenceTokensPct must be within (0, 100], got {reference_pct}")
    limits = _limits(spec)
    checks = _checks(spec)
    nonce = spec.get("promptNonce")
    if nonce is not None and (not isinstance(nonce, str) or not NONCE.fullmatch(nonce)):
        raise ValueError("spec: promptNonce must be null or 32 lowercase hex digits")
    calibration = _calibration(spec.get("calibration"))
    calibrate = _calibrate(spec.get("calibrate"), mode, samples)
    baseline = _baseline(spec.get("baseline"))
    return DecodeSpec(
        benchmark=spec.get("benchmark"),
        mode=mode,
        model=Model(model["family"], os.path.abspath(model["path"])),
        baseline_engine=os.path.abspath(spec["baselineEngine"]),
        reference_engine=None if reference is None else os.path.abspath(reference),
        workloads=workloads,
        samples_per_workload=samples,
        warmup_samples=warmup,
        max_pairs=max_pairs,
        target_half_width_pct=target,
        run_spread_pct=run_spread,
        reference_tokens_pct=100.0 if reference_pct is None else float(reference_pct),
        limits=limits,
        checks=checks,
        prompt_nonce=nonce,
        calibration=calibration,
        calibrate=calibrate,
        baseline=baseline,
    )
