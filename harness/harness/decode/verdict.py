"""The decode run's conclusion: which K (if any) scores it, the per-workload summaries and speed-ups,
the score with its ranking and absolute intervals, and the one result event (verdict, message,
failure code). The checks it concludes from are in checks.py; the measurement in runner.py.
"""
from __future__ import annotations

import math
import statistics
from typing import Callable, Mapping, Optional

from . import pairing
from .checks import report
from .spec import DecodeSpec, KFigure

# The first of these that failed is the run's failure code.
FAILURE_ORDER = ("candidate_error", "timeout", "memory_limit", "incorrect_output", "latency_limit", "unstable_timing")


def hardware_key(name: str) -> str:
    """The one key baselines are cached and compared under: the GPU model name, or "cpu" for every
    CPU machine (the hub's baselineKey and the agent's capability report use the same rule)."""
    return "cpu" if name == "cpu" or name.startswith("cpu:") else name


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def interval(low: float, high: float) -> dict:
    return {"low": round(low, 4), "high": round(high, 4), "halfWidth": round((high - low) / 2, 4), "level": pairing.LEVEL}


def calibration_for(spec: DecodeSpec, hardware: str, log: Callable[..., None]) -> Optional[dict]:
    """The hub's K for this machine's hardware key, per workload (KFigure), when the run can use it:
    a reference engine, K for this key, and K for every workload of the run. Otherwise None (the
    run pairs with the baseline, and says why)."""
    cal = spec.calibration
    why = None
    if spec.reference_engine is None:
        why = "this benchmark has no reference engine"
    elif cal is None:
        why = f"no calibration of K for {hardware!r} yet (an organizer's calibration run measures it)"
    elif hardware_key(str(cal.hardware or "")) != hardware:
        why = f"K was calibrated on {cal.hardware!r}, this machine is {hardware!r}"
    else:
        missing = [w.name for w in spec.workloads if w.name not in cal.workloads]
        if missing:
            why = f"K has no calibration for workload(s) {', '.join(missing)}"
    if why:
        log(f"scoring: against the baseline engine: {why}", "warn" if spec.reference_engine else "info")
        return None
    ks = {w.name: cal.workloads[w.name] for w in spec.workloads}
    log("scoring: against the reference engine, in baseline points through K = baseline time ÷ reference time on "
        f"{hardware}: " + ", ".join(f"{n} K = {k.k:.4f} ({k.low:.4f}–{k.high:.4f})" for n, k in ks.items()))
    return ks


def baseline_figures(records: dict) -> dict:
    """Per workload, the medians of a baseline engine's timed samples (the hub caches these)."""
    figures = {}
    for name, recs in records.items():
        timed = [r.figures() for r in recs if not r.warmup]
        figures[name] = {k: median([f[k] for f in timed]) or 0.0 for k in ("totalMs", "ttftMs", "tpotMs")}
    return figures


def summarise(spec: DecodeSpec, records: dict, baseline_ms: Optional[Mapping[str, float]], ratios: Optional[dict] = None,
              ks: Optional[list] = None) -> tuple[list, dict]:
    """Per workload: the engine's own medians, and its speed-up in baseline points: K × the median
    paired ratio (paired with the reference), the median paired ratio (with the baseline), or the
    baseline's median totalMs (`baseline_ms`) ÷ the one sample (public, no K). Returns the
    summaries and the harness's own cost per step (metrics)."""
    summaries: list = []
    metrics: dict = {}
    parent_ns = child_ns = steps = 0
    child_known = True
    for i, w in enumerate(spec.workloads):
        recs = [r for r in records[w.name] if not r.warmup]
        figs = [r.figures() for r in recs]
        tpots = [f["tpotMs"] for f in figs if f["tpotMs"] is not None]
        med_tpot = median(tpots)
        spread = (max(tpots) - min(tpots)) / med_tpot * 100.0 if len(tpots) >= 2 and med_tpot else None
        total = median([f["totalMs"] for f in figs])
        if ratios is not None:
            rs = ratios[w.name]
            speedup, ratio_spread = statistics.median(rs) * (ks[i] if ks else 1.0), pairing.spread_pct(rs)
        else:
            base = baseline_ms[w.name]
            speedup, ratio_spread = (base / total if total else None), None
        summaries.append({
            "workload": w.name, "samples": len(recs), "tps": median([f["tps"] for f in figs]),
            "ttftMs": median([f["ttftMs"] for f in figs]), "tpotMs": med_tpot, "totalMs": total,
            "spreadPct": spread, "speedup": speedup, "ratioSpreadPct": ratio_spread,
        })
        for r in recs:
            parent_ns += r.sample.parent_ns
            steps += len(r.sample.steps)
            if r.sample.child_overhead_ns is None:
                child_known = False
            else:
                child_ns += r.sample.child_overhead_ns
    if steps:
        metrics["harnessParentUsPerStep"] = parent_ns / steps / 1000.0
        if child_known:
            metrics["harnessChildUsPerStep"] = child_ns / steps / 1000.0
    return summaries, metrics


def conclude(events, spec: DecodeSpec, *, summaries: list, metrics: dict, failures: dict, ratios: Optional[dict],
             ks: Optional[Mapping[str, KFigure]], hardware: str, basis: str, nonce: Optional[str]) -> None:
    """The score, its ranking interval (the pairs) and its absolute interval (with K's), then the
    result: the first failed check of FAILURE_ORDER, else the score."""
    official = spec.official
    kvals = [ks[w.name].k for w in spec.workloads] if ks else None
    speedups = [s["speedup"] for s in summaries]
    score = 100.0 * math.exp(sum(math.log(x) for x in speedups) / len(speedups)) if all(speedups) else None
    ranking = absolute = pairs = None
    k_log = pairing.k_log_half_width([(ks[n].low, ks[n].high) for n in ks]) if ks else None
    k_pct = 100.0 * math.expm1(k_log) if ks else None
    if score is not None:
        metrics["measuredScore"] = score
        if official and ratios is not None:
            per = list(ratios.values())
            pairs = len(per[0])
            scale = pairing.geomean(kvals) if kvals else 1.0
            low, high = pairing.bootstrap_interval(per, spec.bootstrap_seed)
            low, high = pairing.widen(low * scale, high * scale, score, spec.run_spread_pct)
            ranking = interval(low, high)
            if k_log is not None:
                absolute = interval(*pairing.widen_log(low, high, score, k_log))
    cal = spec.calibration if ks else None
    scoring = {
        "against": "reference" if ks else "baseline", "calibrated": bool(ks), "hardware": hardware,
        "kHalfWidthPct": None if k_pct is None else round(k_pct, 4),
        "note": basis + (f"; 100 = the baseline on {hardware} through K = baseline ÷ reference time, calibrated to ±{k_pct:.2f} % "
                         f"({'?' if cal.pairs is None else cal.pairs} pairs, {'?' if cal.runs is None else cal.runs} run(s))" if ks else
                         f"; 100 = the baseline on {hardware}"),
    }
    extra = {"scoring": scoring, "indicative": not official}
    if official:
        extra["promptNonce"] = nonce
    for code in FAILURE_ORDER:
        if code in failures:
            message, detail = failures[code]
            events.log(f"verdict: failed ({code})" + (f"; measured score {score:.2f}" if score is not None else ""), "warn")
            events.result("failed", message, code, None, summaries, metrics, detail, pairs=pairs, **extra)
            return
    if official:
        text = (f"Official score: {score:.2f} (95 % ranking interval {ranking['low']:.2f}–{ranking['high']:.2f}"
                + (f"; absolute {absolute['low']:.2f}–{absolute['high']:.2f} with K's ±{k_pct:.2f} %" if absolute else "")
                + f"). Measured {scoring['note']}")
    else:
        text = f"Public score (indicative, feedback only, not ranked): {score:.2f}. Measured {scoring['note']}"
    events.log(f"verdict: succeeded. {text}")
    events.result("succeeded", text, None, round(score, 4), summaries, metrics,
                  interval=ranking, absoluteInterval=absolute, pairs=pairs, **extra)


def fail_early(events, exc, summaries: list, metrics: dict) -> None:
    """The engine failed while it was measured (its exception's code: timeout, memory_limit, …)."""
    if exc.code == "memory_limit":
        report(events, "memory", False, exc.message)
    events.log(f"verdict: failed ({exc.code})", "warn")
    events.result("failed", exc.message, exc.code, None, summaries, metrics, exc.detail)


def stopped_at_first_rejected_token(events, exc, spec: DecodeSpec, summaries: list, metrics: dict, nonce: Optional[str]) -> None:
    """The candidate's first rejected token (checks.EarlyVerdict): the run ends there."""
    report(events, "output", False, exc.message)
    events.log(f"verdict: failed ({exc.code}) at the first rejected token; the run stops there", "warn")
    events.result("failed", exc.message, exc.code, None, summaries, metrics, exc.detail,
                  indicative=not spec.official, promptNonce=nonce)
