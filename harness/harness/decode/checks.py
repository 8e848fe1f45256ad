"""The decode run's checks: the submission's files, every sample's output (correctness, as it comes)
and, once the measurement is over, memory, latency and timing stability. Each check is reported as a
check event and a line of the run log (`report`); the verdict (verdict.py) turns failed ones into
the run's failure code.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Optional

from ..events import RunFailure
from .failures import HarnessFailure
from .spec import Checks

ALLOWED_EXTENSIONS = (".py", ".pyi", ".yaml", ".yml", ".json", ".toml", ".txt", ".md", ".cfg", ".ini")


class EarlyVerdict(RunFailure):
    """The candidate's verdict, known before the measurement ends (its first rejected token): the run
    stops there instead of timing the remaining pairs."""


def report(events, name: str, passed: bool, detail: str) -> None:
    """A check event, and its verdict in the run log."""
    events.check(name, passed, detail)
    events.log(f"check {name}: {'passed' if passed else 'FAILED'}: {detail}", "info" if passed else "warn")


def check_submission_files(root: str) -> Optional[str]:
    if not os.path.isfile(os.path.join(root, "engine.py")):
        return "The submission has no engine.py at its root."
    bad = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                bad.append(f"{rel} (symbolic link)")
            elif name in filenames and not name.endswith(ALLOWED_EXTENSIONS) and name != "__pycache__":
                bad.append(rel)
        dirnames[:] = [d for d in dirnames if d != "__pycache__" and not os.path.islink(os.path.join(dirpath, d))]
    if bad:
        shown = ", ".join(sorted(bad)[:10]) + (" …" if len(bad) > 10 else "")
        return f"Files of a type that is not allowed: {shown}. Allowed: {' '.join(ALLOWED_EXTENSIONS)}."
    return None


class OutputCheck:
    """The output check, sample by sample as they come. A trusted engine's tokens become the reference
    tokens of their prompts once the reference model accepts them; a candidate token equal to the
    trusted token at the same place is accepted, any other only where the reference model's
    teacher-forced logit is within the tolerance of the row's max. `reference` is set by the runner
    once it has opened the reference model."""

    def __init__(self, tolerance: float, log: Callable[..., None]) -> None:
        self.tolerance = tolerance
        self.log = log
        self.reference = None
        # (workload, sample number) -> the sequences of a trusted engine that the reference model accepted
        self.trusted_tokens: dict = {}
        # the same for the candidate's samples the reference model accepted: a shorter trusted sample
        # of the same prompts that begins them needs no pass of its own (checked())
        self.candidate_tokens: dict = {}
        self.judged = 0
        self.ties = 0
        self.worst_deficit = 0.0
        self.seconds = 0.0  # spent checking, for the run's account of its GPU time

    def accept_trusted(self, rec) -> None:
        """A trusted engine's tokens become the reference tokens of their prompts once the reference
        model accepts them (or, in a calibration run, once they equal the other trusted engine's
        accepted tokens): a disagreement is the evaluator's problem, never the candidate's."""
        key = (rec.workload.name, rec.sample_no)
        outs = rec.sample.sequences()
        known = self.trusted_tokens.get(key)
        if begins(outs, known) or begins(outs, self.candidate_tokens.get(key)):
            return  # the reference model accepted these tokens already (a shorter sample: their start)
        bad = self.reference.verify(rec.prompts, outs, self.tolerance)
        if bad:
            raise HarnessFailure(
                "harness_error",
                f"The trusted engine's output disagrees with the reference model at workload {key[0]}, sample {rec.sample_no}, "
                f"sequence {bad['sequence']}, step {bad['step']} (logit {bad['tokenLogit']} vs max {bad['maxLogit']}); "
                "the logit tolerance is too tight for this hardware or the reference is broken.",
            )
        if known is None or len(outs[0]) > len(known[0]):
            self.trusted_tokens[key] = outs

    def judge(self, rec) -> None:
        """The candidate's sample, checked as soon as it is measured: equal to the trusted tokens of the
        same prompts, or accepted by the reference model's teacher-forced pass within the tolerance.
        Its first rejected token ends the run (EarlyVerdict): no GPU time is spent on more pairs."""
        tol = self.tolerance
        name = rec.workload.name
        outs = rec.sample.sequences()
        self.judged += 1
        expected = self.trusted_tokens.get((name, rec.sample_no))
        if expected == outs:
            return
        if expected is not None:
            for s, (a, b) in enumerate(zip(outs, expected)):
                # a shorter trusted sample (the reference's clock) that agrees as far as it goes is no divergence
                t = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
                if t is not None:
                    if self.ties < 3:
                        self.log(f"{name} sample {rec.sample_no}: sequence {s} leaves the trusted engine's tokens at step {t}; "
                                 "checking it against the reference model over its own tokens")
                    self.ties += 1
        bad = self.reference.verify(rec.prompts, outs, tol)
        self.worst_deficit = max(self.worst_deficit, getattr(self.reference, "max_deficit", 0.0))
        if bad:
            kind = "warm-up sample" if rec.warmup else "sample"
            message = (
                f"Incorrect output in workload {name}, {kind} {rec.index}: sequence {bad['sequence']}, step {bad['step']} "
                f"produced token {bad['token']}, but the greedy choice is token {bad['best']}."
            )
            detail = (
                f"workload {name}, {kind} {rec.index}, sequence {bad['sequence']}, step {bad['step']} (0-based, step 0 is the first generated token)\n"
                f"candidate token {bad['token']} has logit {bad['tokenLogit']}; the row's max is {bad['maxLogit']} at token {bad['best']}; "
                f"accepted only within {tol:g} of the max (checks.logitTolerance)."
            )
            raise EarlyVerdict("incorrect_output", message, detail)
        self.candidate_tokens[(name, rec.sample_no)] = outs

    def checked(self, *recs) -> None:
        """Trusted records first (their tokens are the reference), then the candidate's.

        A trusted sample shorter than the candidate's of the same prompts (the reference engine's
        shortened clock, runner.reference_steps) is checked through the candidate's instead: its
        tokens could not vouch for the candidate's later ones, so the candidate's whole sample takes
        the teacher-forced pass, and that pass accepts the trusted tokens too where they begin the
        candidate's (one pass per pair, as with whole samples). Should the candidate's be rejected,
        the trusted sample is checked on its own before the verdict, so that a disagreement of the
        reference model with a trusted engine stays the evaluator's (HarnessFailure), as before."""
        t = time.perf_counter()
        try:
            candidates = [r for r in recs if r.role == "candidate"]
            # the longest trusted sample first: a shorter one of the same prompts is then free
            trusted = sorted((r for r in recs if r.role != "candidate"), key=lambda r: -len(r.sample.steps))
            deferred = [r for r in trusted if any(c.workload.name == r.workload.name and c.sample_no == r.sample_no
                                                  and len(c.sample.steps) > len(r.sample.steps) for c in candidates)]
            for rec in trusted:
                if rec not in deferred:
                    self.accept_trusted(rec)
            try:
                for rec in candidates:
                    self.judge(rec)
            except EarlyVerdict:
                for rec in deferred:
                    self.accept_trusted(rec)
                raise
            for rec in deferred:
                self.accept_trusted(rec)
        finally:
            self.seconds += time.perf_counter() - t


def begins(short: Optional[list], full: Optional[list]) -> bool:
    """Whether every sequence of `short` is the start of (or equal to) the same sequence of `full`."""
    if short is None or full is None or len(short) != len(full):
        return False
    return all(len(a) <= len(b) and b[:len(a)] == a for a, b in zip(short, full))


def limits_text(checks: Checks) -> str:
    parts = [f"{label} ≤ {limit:g} ms" for limit, label in ((checks.max_ttft_ms, "TTFT"), (checks.max_tpot_ms, "TPOT")) if limit is not None]
    return ", ".join(parts) if parts else "the latency limits (none set)"


def final_checks(events, checks: Checks, output: OutputCheck, *, official: bool, memory_limit: Optional[float],
                 measurer_name: Optional[str], peak: Optional[int], records: dict, summaries: list, metrics: dict) -> dict:
    """The checks made once the measurement is over, each reported: output (every sample was judged
    as it came), memory (the candidate's child only) and, in official runs, latency and timing
    stability. Returns the failed ones, {failure code: (message, detail)}; adds the output and
    memory figures to `metrics`."""
    failures: dict = {}

    # 1. output (every sample was judged as it came)
    metrics["sequencesOffBaseline"] = output.ties
    metrics["maxAcceptedLogitDeficit"] = output.worst_deficit
    if output.ties:
        events.log(f"{output.ties} sequence(s) differed from the trusted engine's tokens; every token was accepted by the teacher-forced check (within the tolerance)")
    report(events, "output", True, f"every token of {output.judged} sample(s) is the reference model's greedy choice (logit tolerance {checks.logit_tolerance:g})")

    # 2. memory (the candidate's child only; over the limit, the engine was stopped as it happened)
    if measurer_name is None or memory_limit is None:
        why = "no memory limit in this benchmark" if memory_limit is None else "no way to measure the engine's memory on this machine"
        report(events, "memory", True, f"not applicable: {why}" + (f"; peak {peak} bytes" if peak else ""))
    else:
        report(events, "memory", True, f"peak {peak} bytes ({measurer_name}) ≤ limit {int(memory_limit)} bytes")
    if peak is not None:
        metrics["peakMemoryBytes"] = peak

    # 3. latency and stability (official runs)
    if official:
        over = []
        for name, recs in records.items():
            for r in recs:
                if r.warmup:
                    continue
                f = r.figures()
                if checks.max_ttft_ms is not None and f["ttftMs"] > checks.max_ttft_ms:
                    over.append(f"{name} sample {r.index}: TTFT {f['ttftMs']:.2f} ms > {checks.max_ttft_ms:g} ms")
                if checks.max_tpot_ms is not None and f["tpotMs"] is not None and f["tpotMs"] > checks.max_tpot_ms:
                    over.append(f"{name} sample {r.index}: TPOT {f['tpotMs']:.3f} ms > {checks.max_tpot_ms:g} ms")
        if over:
            failures["latency_limit"] = ("; ".join(over[:5]), None)
        report(events, "latency", not over, "; ".join(over[:5]) if over else "every timed sample within " + limits_text(checks))
        limit_pct = checks.max_ratio_spread_pct
        unstable = [f"{s['workload']}: spread of the paired ratios {s['ratioSpreadPct']:.2f}% > {limit_pct:g}%"
                    for s in summaries if s["ratioSpreadPct"] is not None and s["ratioSpreadPct"] > limit_pct]
        if unstable:
            failures["unstable_timing"] = ("; ".join(unstable), None)
        spreads = ", ".join(f"{s['workload']} {s['ratioSpreadPct']:.2f}%" for s in summaries if s["ratioSpreadPct"] is not None)
        report(events, "timing_stability", not unstable, "; ".join(unstable) if unstable else
               f"interquartile range ÷ median of the paired time ratios ≤ {limit_pct:g}%: {spreads}")
    return failures
