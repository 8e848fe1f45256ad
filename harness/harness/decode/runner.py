"""Decode evaluation: the candidate against a trusted engine, correctness, limits, score.

This module measures (engines, samples, pairs); the spec is parsed once by spec.py, the checks are
in checks.py and the conclusion (K, summaries, score, intervals, result) in verdict.py.

Flow of one run (all in the trusted parent; engines run in untrusted children, see engineproc):
 1. Check the submission's files (allowed extensions, no links).
 2. Official runs (paired, see pairing.py): a trusted engine and the candidate each run in their
    own child, loaded side by side (untimed). The trusted engine is the **reference**
    (spec.referenceEngine: harness/reference/..., steady: CUDA graphs on the GPU) where the hub has
    K for this hardware key (spec.calibration), else the eager **baseline** (spec.baselineEngine).
    Per workload both get warm-ups (alternating; each stops once settled, SETTLE_PCT), then timed
    samples alternate in pairs on the same prompts, AB, BA, AB, … per workload. Pairs are added in
    rounds (one per workload, visited so that each pair starts with the engine that ran last) from
    samplesPerWorkload up to maxPairs until the pairs' 95 % bootstrap interval is within
    targetHalfWidthPct. Hidden workloads' prompts mix a per-run secret nonce into their seed.
 3. Public runs: with K, one candidate sample per workload paired with one reference sample; without,
    one candidate sample against spec.baseline (the hub's cache), or, when there is none, against the
    baseline engine measured first in its own child. The score is indicative.
 4. Output check, sample by sample as they come (the first rejected token ends the run): a token
    equal to the trusted engine's token at the same place is accepted (the trusted tokens were
    themselves checked); otherwise the parent runs one teacher-forced forward of the reference
    model over prompt + the candidate's own tokens and accepts a token only where its logit is
    within checks.logitTolerance of the row's max. After a tie-accepted divergence, later tokens
    are judged against the candidate's own prefix, which is what the teacher-forced pass does.
 5. Memory (the candidate's child only), latency and timing stability of the paired ratios
    (official), then the score in baseline points: 100 × geometric mean over workloads of the
    speed-up, which is K_w × the median over pairs of reference ÷ candidate totalMs (with K),
    the median of baseline ÷ candidate (paired with the baseline), or the cached baseline's totalMs
    ÷ the candidate's one sample (public, no K). Official scores carry the ranking interval (the
    pairs, + runSpreadPct) and, with K, the absolute one (K's own interval folded in).
 Baseline re-measures (mode "baseline", an organizer's request; no submission): only the trusted
    baseline engine runs, in its own child: warm-ups, then samplesPerWorkload (at least 10) timed
    samples per workload; its tokens must pass the reference model; the result carries the medians
    (`baseline`: hardware key, samples, workloads), which the hub caches under that key. No score.
 Calibrations (mode "calibration", an organizer's request; no submission): the baseline and the
    reference engine in pairs until this run's interval of K is within calibrate.targetHalfWidthPct,
    or calibrate.budgetSeconds or maxPairs is spent; the result carries every pair's ratio, which
    the hub pools per hardware key into K.
"""
from __future__ import annotations

import math
import os
import platform
import secrets
import statistics
import time
from typing import Optional

from .. import compile_cache, jail
from .engineproc import EngineFailure, EngineProcess, Sample
from .failures import HarnessFailure, IdleEngineFailure  # noqa: F401 (HarnessFailure re-exported)
from .freezer import Freezer
from .memory import make_measurer
from .spec import DecodeSpec, Workload, parse_decode_spec
from . import cpus as cpus_mod
from . import pairing
from . import verdict
from .checks import ALLOWED_EXTENSIONS, EarlyVerdict, OutputCheck, check_submission_files, final_checks, report  # noqa: F401 (re-exported)
from .prompts import prompts as make_prompts
from .verdict import FAILURE_ORDER, hardware_key  # noqa: F401 (re-exported: libs and the tests name runner.hardware_key)


def open_reference(model):
    if model.family == "toy":
        from .models.toy import ToyReference

        return ToyReference(model.path)
    from .models.qwen3 import Qwen3Reference

    return Qwen3Reference(model.path)


def hardware_name() -> str:
    try:
        import subprocess

        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
        names = [n.strip() for n in out.stdout.splitlines() if n.strip()]
        if out.returncode == 0 and names:
            return names[0]
    except Exception:
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"cpu: {cpu}"


def ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


class Record:
    def __init__(self, workload: Workload, sample_no: int, index: int, warmup: bool, prompts, sample: Sample, peak) -> None:
        self.workload, self.sample_no, self.index, self.warmup = workload, sample_no, index, warmup
        self.prompts, self.sample, self.peak = prompts, sample, peak
        self.role: Optional[str] = None  # set by the caller: "baseline", "reference" or "candidate"

    def figures(self) -> dict:
        s = self.sample
        total = ms(s.total_ns)
        # the tokens this sample generated (a reference engine's may stop early: reference_steps)
        tokens = self.workload.batch_size * len(s.steps)
        return {
            "ttftMs": ms(s.ttft_ns),
            "tpotMs": ms(s.tpot_ns),
            "totalMs": total,
            "tps": tokens / (total / 1000.0) if total else None,
        }


# Warm-ups stop once the engine's step time has settled: from then on it no longer moves
# (compilation, graph capture and the allocator's first growth are behind it), so further warm-ups
# would only spend the GPU. Settled means within this many percent (see settled()).
SETTLE_PCT = 5.0
# A sample needs this many decode steps for its step time to be read inside it (steady_within).
SETTLE_MIN_STEPS = 16
TRUSTED_ROLES = ("baseline", "reference")
# A shortened reference sample keeps at least this many steps, so its step time can still be read.
REFERENCE_MIN_STEPS = 2 * SETTLE_MIN_STEPS


def reference_steps(spec: DecodeSpec, role: str, w: Workload) -> Optional[int]:
    """How many steps the reference engine's samples of workload w run where the definition
    shortens them (samples.referenceTokensPct < 100), else None (whole samples, as every other
    engine's always are).

    The reference is a clock: each pair's ratio is its time ÷ the candidate's on the same prompts,
    and K (baseline time ÷ reference time, calibrated with the same shortened samples) turns it into
    baseline points, so the score keeps its meaning while the reference's share of the GPU falls.
    The reference keeps the workload's shape (it is asked for max_new_tokens and stopped: its
    static cache and CUDA graphs are those of the whole sample), and, being steady, loses little
    precision with fewer steps (harness/README.md, "The reference's shorter clock")."""
    pct = spec.reference_tokens_pct
    if role != "reference" or pct >= 100:
        return None
    n = max(math.ceil(w.max_new_tokens * pct / 100.0), min(REFERENCE_MIN_STEPS, w.max_new_tokens))
    return None if n >= w.max_new_tokens else n
ROLE_NAMES = {"baseline": "the baseline engine", "reference": "the reference engine", "candidate": "the candidate"}


def step_ms(sample: Sample) -> list:
    """The time of each decode step (between consecutive tokens), in ms."""
    st = sample.stamps
    return [(st[i] - st[i - 1]) / 1e6 for i in range(1, len(st))]


def _within(a: float, b: float) -> bool:
    return b > 0 and abs(a / b - 1.0) * 100.0 <= SETTLE_PCT


def steady_within(sample: Sample) -> bool:
    """Whether the step time no longer moves inside one sample: the median step of its second
    quarter within SETTLE_PCT of its last quarter's (the first quarter, with any capture or compile
    of the step, left out). False for samples too short to tell (SETTLE_MIN_STEPS)."""
    steps = step_ms(sample)
    n = len(steps)
    if n < SETTLE_MIN_STEPS:
        return False
    return _within(statistics.median(steps[3 * n // 4:]), statistics.median(steps[n // 4:n // 2]))


def settled(role: str, samples: list) -> bool:
    """Whether an engine's warm-ups of one workload (its Samples so far) have settled.

    - A trusted engine (harness-owned code that compiles or captures everything in its first
      sample of a shape): after one warm-up whose step time settled inside it (steady_within).
    - Any engine, the candidate always, after at least two (its first call of a shape may compile
      or capture, its second may record what it captured on the first, as torch.compile's CUDA
      graphs do): once the last one's step time settled inside it, or its median step is within
      SETTLE_PCT of the one before (a total that still includes the first sample's prefill capture
      does not keep it warming up), or, for samples of too few steps to have a step time, once the
      last total is within SETTLE_PCT of the one before.
    """
    if not samples:
        return False
    if role in TRUSTED_ROLES and steady_within(samples[-1]):
        return True
    if len(samples) < 2:
        return False
    if steady_within(samples[-1]):
        return True
    last, prev = samples[-1], samples[-2]
    if len(last.stamps) > SETTLE_MIN_STEPS and len(prev.stamps) > SETTLE_MIN_STEPS:
        return _within(statistics.median(step_ms(last)), statistics.median(step_ms(prev)))
    return _within(last.total_ns, prev.total_ns)


class DecodeRun:
    def __init__(self, spec: dict, submission_dir: str, events, measurer_factory=make_measurer) -> None:
        self.spec: DecodeSpec = parse_decode_spec(spec)
        # The engines' sandboxes must see the model even where it lives under /tmp (harness/jail.py).
        os.environ["DRYFT_JAIL_READ"] = self.spec.model.path
        self.submission_dir = os.path.abspath(submission_dir)
        self.events = events
        self.measurer_factory = measurer_factory
        self.started = time.perf_counter_ns()
        self.run_deadline = self.started + int(self.spec.limits.run_seconds * 1e9)
        # Official runs: the secret mixed into every hidden workload's prompt seed, drawn fresh for
        # each run (an organizer's audit re-run may pass the original). Never printed: an engine that
        # logs its prompts in one run learns nothing about the next one's.
        self.nonce = (self.spec.prompt_nonce or secrets.token_hex(16)) if self.spec.official else None
        self.reference = None
        self.summaries: list = []
        self.metrics: dict = {}
        self.procs: list = []
        self.freezer: Optional[Freezer] = None  # made with the first engine child (_open_all)
        self.candidate_measurer = None  # the candidate child's, when it can measure (its describe() ends in the memory check)
        self.peak = None
        self.output = OutputCheck(self.spec.checks.logit_tolerance, self.events.log)
        self.cache: Optional[compile_cache.CandidateCache] = None  # the candidate's, when the agent gave one

    def _open_reference(self) -> None:
        """The parent's reference model: the output check's judge."""
        self.reference = self.output.reference = open_reference(self.spec.model)

    # -- measuring engines ------------------------------------------------------------------

    def _deadline(self, seconds: float, what: str) -> tuple[int, str]:
        own = time.perf_counter_ns() + int(seconds * 1e9)
        if own <= self.run_deadline:
            return own, f"{what} of {seconds:g} s"
        return self.run_deadline, f"the whole-run deadline (limits.runSeconds = {self.spec.limits.run_seconds:g} s)"

    def _engine_dir(self, role: str) -> str:
        return {"baseline": self.spec.baseline_engine, "reference": self.spec.reference_engine,
                "candidate": self.submission_dir}[role]

    @staticmethod
    def _trusted(role: str, fn):
        """Runs fn; a failure of a trusted engine's child (baseline, reference) is the evaluator's."""
        try:
            return fn()
        except IdleEngineFailure:
            raise  # the idle candidate's, found while a trusted engine was timed (freezer.py)
        except EngineFailure as exc:
            if role == "candidate":
                raise
            raise HarnessFailure("harness_error", f"The {role} engine failed ({exc.code}): {exc.message}", exc.detail)

    def _open_all(self, roles: list) -> dict:
        """Starts each engine's child and loads them side by side (untimed), the parent's reference
        model meanwhile. Memory is limited for the candidate only; a trusted engine's child is
        measured for the log but never judged."""
        limits = self.spec.limits
        procs: dict = {}
        # Before the load clock starts: copying the team's saved cache in is the evaluator's time.
        cache_dir = self._candidate_cache() if "candidate" in roles else None
        t = time.perf_counter()
        deadline, text = self._deadline(limits.load_seconds, "limits.loadSeconds")
        for role in roles:
            measurer = self.measurer_factory(limits.memory_measure)
            proc = EngineProcess(self._engine_dir(role), role, measurer, limits.memory_bytes if role == "candidate" else None)
            self.procs.append(proc)
            if role == "candidate":
                self.candidate_measurer = measurer if measurer.applicable else None
                proc.cache_dir = cache_dir
            self.freezer = self.freezer or Freezer(self.events.log)
            cgroup = self.freezer.prepare(role)
            proc.start(cgroup.path if cgroup else None)
            self.freezer.attach(proc, cgroup)
            self._trusted(role, lambda: proc.begin_load(self.spec.model.path))
            procs[role] = proc
        load_model = getattr(self.reference, "load", None)
        if load_model is not None:
            load_model()  # the checker's own weights, while the engines load theirs
        for role in roles:
            self._trusted(role, lambda: procs[role].finish_load(deadline, text))
            load_s = time.perf_counter() - t
            self.events.log(f"{role}: Engine(model_path) ready in {load_s:.2f} s (untimed"
                            + ("; the engines load side by side)" if len(roles) > 1 else ")"))
            if role == "candidate":
                self.metrics["loadSeconds"] = load_s
        return procs

    def _candidate_cache(self) -> Optional[str]:
        """In the jail: the team's saved compile cache, copied into the work tmpfs the agent gave
        this run, becomes the candidate's (compile_cache.py): the folder its jail binds. None: its
        caches start empty in its own /tmp."""
        if not jail.enabled():
            return None
        names = ", ".join(jail.COMPILE_CACHE_VARS)
        self.cache = self.cache or compile_cache.CandidateCache.from_env(self.events.log)
        if self.cache is None:
            self.events.log(f"candidate: its compile caches ({names}) start empty in this run")
            return None
        self.events.log(f"candidate: its compile caches ({names}) are this team's own, kept between its runs of this "
                        "benchmark and rules version on this slot (never another team's; the trusted engines start empty)")
        try:
            return self.cache.seed(jail.limits_for("candidate", None).uid)
        except OSError as exc:
            # the run goes on: the candidate compiles from an empty cache in its own /tmp, and the
            # saved one is left as it was
            self.events.log(f"candidate: its compile cache could not be prepared ({exc}); it starts empty in this run", "warn")
            self.cache = None
            return None

    def _prompts(self, w: Workload, sample_no: int):
        nonce = self.nonce if w.hidden else None
        return make_prompts(w.seed, sample_no, w.batch_size, w.prompt_length, self.reference.prompt_vocab, nonce)

    def _sample(self, proc: EngineProcess, w: Workload, sample_no: int, index: int, warmup: bool, note: str = "") -> Record:
        ids = self._prompts(w, sample_no)
        deadline, text = self._deadline(self.spec.limits.sample_seconds, "limits.sampleSeconds")
        # every other live engine is frozen while this one's sample runs (freezer.py)
        # (kept frozen after it until that engine runs again: consecutive samples of one engine, and
        # the checks between them, need no thaw and re-freeze, and one GPU wait serves them all)
        idle = [p for p in self.procs if p is not proc and p.alive]
        stop_after = reference_steps(self.spec, proc.role, w)
        with self.freezer.hold(idle, timed=not warmup, stay=True):
            sample = self._trusted(proc.role, lambda: proc.generate(ids, w.max_new_tokens, self.reference.vocab_size, deadline, text, stop_after))
        rec = Record(w, sample_no, index, warmup, ids, sample, proc.peak_memory)
        fig = rec.figures()
        if proc.role == "candidate":
            self.events.emit({
                "type": "sample", "workload": w.name, "index": index, "warmup": warmup,
                **fig, "tokens": w.tokens, "batchSize": w.batch_size,
                "promptLength": w.prompt_length, "peakMemoryBytes": proc.peak_memory,
            })
        tpot = "—" if fig["tpotMs"] is None else f"{fig['tpotMs']:.3f}"
        self.events.log(
            f"{proc.role} {w.name} {'warm-up' if warmup else 'sample'} {index}{note}: total {fig['totalMs']:.2f} ms, "
            f"TTFT {fig['ttftMs']:.2f} ms, TPOT {tpot} ms" + (f" (its first {stop_after} of {w.max_new_tokens} steps)" if stop_after else "")
        )
        return rec

    # -- one engine alone, and two engines in pairs --------------------------------------------

    def measure(self, role: str, timed: int) -> dict:
        """One engine alone (a baseline re-measure, the baseline and candidate of a public run without
        K): warm-ups then `timed` samples per workload, each checked as it comes."""
        spec = self.spec
        records: dict = {w.name: [] for w in spec.workloads}
        proc = self._open_all([role])[role]
        try:
            for w in spec.workloads:
                plan = [(True, i) for i in range(spec.warmup_samples)] + [(False, i) for i in range(timed)]
                for sample_no, (warmup, index) in enumerate(plan):
                    rec = self._sample(proc, w, sample_no, index, warmup)
                    rec.role = role
                    records[w.name].append(rec)
                    self.output.checked(rec)
        finally:
            proc.close()
        self.peak = proc.peak_memory
        return records

    def _warm_up(self, procs: dict, roles: tuple, w: Workload, records: dict) -> None:
        """One workload's warm-ups, the two engines alternating (AB, BA, …): each engine at least one
        (with warmupSamples ≥ 1), at most warmupSamples, fewer once settled (SETTLE_PCT)."""
        cap = self.spec.warmup_samples
        done_by: dict = {role: [] for role in roles}
        for i in range(cap):
            done = []
            for role in pairing.order(i, *roles):
                if settled(role, done_by[role]):
                    continue
                rec = self._sample(procs[role], w, i, i, True)
                rec.role = role
                records[role][w.name].append(rec)
                done_by[role].append(rec.sample)
                done.append(rec)
            if not done:
                break
            self.output.checked(*done)
        for role in roles:
            n = len(done_by[role])
            if n < cap:
                how = ("its step time settled inside it" if n == 1 else
                       f"the last one's step time settled inside it or within {SETTLE_PCT:g} % of the one before")
                self.events.log(f"{role} {w.name}: warm-ups settled after {n} of at most {cap} ({how})")

    def measure_paired(self, trusted: str, other: str, min_pairs: int, max_pairs: int, target, budget_s=None) -> tuple[dict, dict]:
        """Two engines in two children, timed samples in pairs on the same prompts, each workload's in
        the order AB, BA, … (A the trusted engine), in rounds of one pair per workload
        (pairing.round_order: one switch between the engines per pair). Returns (records by role and
        workload, ratios per workload: the trusted engine's totalMs ÷ the other's). A failure of a trusted engine's child is the
        evaluator's (HarnessFailure); one of the candidate's an EngineFailure against it."""
        spec, events = self.spec, self.events
        workloads = spec.workloads
        roles = (trusted, other)
        cap = spec.warmup_samples
        records: dict = {role: {w.name: [] for w in workloads} for role in roles}
        ratios: dict = {w.name: [] for w in workloads}
        procs = self._open_all(list(roles))
        loaded_s = (time.perf_counter_ns() - self.started) / 1e9
        try:
            events.log(
                f"paired measurement: {ROLE_NAMES[trusted]} and {ROLE_NAMES[other]}, {min_pairs} to {max_pairs} pairs per workload"
                + (f", until the pairs' 95 % bootstrap interval is within ±{target:g} %" if target and max_pairs > min_pairs else "")
                + (f" or {budget_s:g} s have passed" if budget_s else "")
                + (f"; the reported interval adds this benchmark's run-to-run spread of {spec.run_spread_pct:g} %"
                   if spec.run_spread_pct and other == "candidate" else "")
                + f"; each pair is one sample of each on the same prompts, each workload's pairs in the order AB, BA, AB, … "
                f"(A: {trusted}), the workloads visited so that every pair starts with the engine that ran last"
                + ("; the reference engine's samples are its clock: each stops after "
                   + ", ".join(f"{reference_steps(spec, 'reference', w) or w.max_new_tokens} of {w.max_new_tokens} steps ({w.name})" for w in workloads)
                   + f" (samples.referenceTokensPct {spec.reference_tokens_pct:g}; K is calibrated the same way)"
                   if "reference" in roles and spec.reference_tokens_pct < 100 else "")
            )
            for w in workloads:
                self._warm_up(procs, roles, w, records)
            pairs = 0
            hw = None
            round_s = 0.0
            while pairing.more_pairs(pairs, min_pairs, max_pairs, hw, target):
                if pairs >= min_pairs and time.perf_counter_ns() + int(2 * round_s * 1e9) > self.run_deadline:
                    events.log(f"stopping at {pairs} pairs: another round would come too close to the whole-run deadline", "warn")
                    break
                if budget_s and pairs >= min_pairs and (time.perf_counter_ns() - self.started) / 1e9 + round_s > budget_s:
                    events.log(f"stopping at {pairs} pairs: another round would pass the budget of {budget_s:g} s", "warn")
                    break
                t0 = time.perf_counter()
                p = pairs
                for j, pair_order in pairing.round_order(p, len(workloads), *roles):
                    w = workloads[j]
                    ab = "".join("A" if r == trusted else "B" for r in pair_order)
                    got = {}
                    for role in pair_order:
                        got[role] = self._sample(procs[role], w, cap + p, p, False, f" (pair {p}, {ab})")
                        got[role].role = role
                    for role in roles:
                        records[role][w.name].append(got[role])
                    r = got[trusted].figures()["totalMs"] / got[other].figures()["totalMs"]
                    ratios[w.name].append(r)
                    events.log(f"pair {p} {w.name}: {trusted}/{other} = {r:.4f}")
                    self.output.checked(got[trusted], got[other])
                pairs += 1
                round_s = time.perf_counter() - t0
                if pairs >= min_pairs:
                    per = [ratios[w.name] for w in workloads]
                    point = pairing.score(per)
                    low, high = pairing.bootstrap_interval(per, spec.bootstrap_seed)
                    hw = pairing.half_width_pct(low, high, point)
                    events.log(f"after {pairs} pairs: the pairs' 95 % interval is ±{hw:.2f} % of the geometric mean ratio {point / 100:.4f}")
            self._log_gpu_account(records, loaded_s)
        finally:
            self.freezer.release()
            for proc in procs.values():
                proc.close()
        if "candidate" in procs:
            self.peak = procs["candidate"].peak_memory
        return records, ratios

    def _log_gpu_account(self, records: dict, loaded_s: float) -> None:
        """Where a paired run's time went, all of which holds the GPU (issue 29: spend it on what is
        measured): the loads, the warm-ups and timed samples of each engine, the switches between
        them (freezing, the GPU's idle wait), the parent's output checks, and the rest."""
        wall = (time.perf_counter_ns() - self.started) / 1e9
        parts = []
        spent = loaded_s
        for role, by_workload in records.items():
            recs = [r for rs in by_workload.values() for r in rs]
            warm = sum(r.sample.total_ns for r in recs if r.warmup) / 1e9
            timed = sum(r.sample.total_ns for r in recs if not r.warmup) / 1e9
            n_warm = sum(r.warmup for r in recs)
            parts.append(f"{role} {timed:.2f} s timed, {warm:.2f} s in {n_warm} warm-up(s)")
            spent += warm + timed
        switches = sum(self.freezer.switch_ns) / 1e9 if self.freezer else 0.0
        gpu_wait = self.freezer.gpu_wait_s if self.freezer else 0.0
        checks = self.output.seconds
        spent += switches + checks
        self.events.log(
            f"GPU time so far {wall:.1f} s: start and load {loaded_s:.2f} s; " + "; ".join(parts)
            + f"; switches between the engines {switches:.2f} s over {len(self.freezer.switch_ns) if self.freezer else 0} samples "
            f"(waiting for the GPU to read idle {gpu_wait:.2f} s); output checks {checks:.2f} s; the rest {max(0.0, wall - spent):.2f} s"
        )

    def check(self, name: str, passed: bool, detail: str) -> None:
        """A check event, and its verdict in the run log."""
        report(self.events, name, passed, detail)

    # -- the run -------------------------------------------------------------------------------

    def remeasure(self) -> None:
        """Baseline re-measure: the trusted baseline engine alone, its medians in the result."""
        spec, events = self.spec, self.events
        self._open_reference()
        machine = hardware_name()
        hardware = hardware_key(machine)
        n = spec.samples_per_workload
        events.log(f"baseline re-measure: {spec.benchmark}, {len(spec.workloads)} workload(s), {n} timed samples each, "
                   f"hardware {machine} (baseline key {hardware!r}); no submission runs")
        # Its tokens must be the reference model's, as when they serve as a run's reference tokens.
        records = self.measure("baseline", n)
        workloads = verdict.baseline_figures(records)
        self._summarise(records, {name: f["totalMs"] for name, f in workloads.items()})
        for s in self.summaries:
            s["speedup"] = None  # no candidate: nothing is compared
        self.check("output", True, f"every token of the baseline's {sum(len(r) for r in records.values())} sample(s) is the reference model's greedy choice")
        text = f"Baseline re-measured on {hardware}: medians of {n} timed samples per workload (no score; the hub caches them for this hardware)"
        events.log(f"verdict: succeeded. {text}")
        events.result("succeeded", text, None, None, self.summaries, self.metrics,
                      baseline={"hardware": hardware, "samples": n, "workloads": workloads})

    def calibrate(self) -> None:
        """Calibration of K: the baseline and the reference engine in pairs (no submission) until this
        run's interval of K is within calibrate.targetHalfWidthPct, or its budget or maxPairs is spent.
        The result carries every pair's ratio; the hub pools the runs of this hardware key."""
        spec, events = self.spec, self.events
        cal = spec.calibrate
        self._open_reference()
        machine = hardware_name()
        hardware = hardware_key(machine)
        events.log(f"calibration of K: {spec.benchmark}, {len(spec.workloads)} workload(s), hardware {machine} (key {hardware!r}); "
                   f"target ±{cal.target_half_width_pct:g} %, at most {cal.max_pairs} pairs or {cal.budget_seconds:g} s; no submission runs")
        records, ratios = self.measure_paired("baseline", "reference", spec.samples_per_workload, cal.max_pairs,
                                              cal.target_half_width_pct, cal.budget_seconds)
        per = [ratios[w.name] for w in spec.workloads]
        pairs = len(per[0])
        point = pairing.score(per)
        low, high = pairing.bootstrap_interval(per, spec.bootstrap_seed)
        hw = pairing.half_width_pct(low, high, point)
        seconds = (time.perf_counter_ns() - self.started) / 1e9
        self._summarise(records["reference"], None, ratios)
        self.check("output", True, f"every token of the baseline's and the reference engine's {2 * pairs * len(per)} timed sample(s) "
                   "is the reference model's greedy choice")
        ks = ", ".join(f"{w.name} {statistics.median(ratios[w.name]):.4f}" for w in spec.workloads)
        text = (f"Calibrated on {hardware}: K = baseline ÷ reference time {ks} (median per workload), ±{hw:.2f} % after {pairs} pairs "
                f"per workload in {seconds:.0f} s (this run alone; the hub pools the runs of this hardware)")
        events.log(f"verdict: succeeded. {text}")
        events.result("succeeded", text, None, None, self.summaries, self.metrics, pairs=pairs,
                      calibration={"hardware": hardware, "pairs": pairs, "seconds": round(seconds, 3), "halfWidthPct": round(hw, 4),
                                   "workloads": {n: {"ratios": [round(x, 6) for x in rs]} for n, rs in ratios.items()}})

    def pin_cpus(self) -> None:
        try:
            cpus = cpus_mod.pin_from_env()
        except (ValueError, OSError) as exc:
            raise HarnessFailure("harness_error", f"{cpus_mod.ENGINE_CPUS_ENV}={os.environ.get(cpus_mod.ENGINE_CPUS_ENV)!r} cannot be used: {exc}. "
                                 "The agent sets it from slots[].cpus in its config; give CPUs this machine has.")
        if cpus:
            self.events.log(f"engine CPUs: {cpus} (the harness and every engine child, from the agent's slots[].cpus)")

    def run(self) -> None:
        spec = self.spec
        self.pin_cpus()
        if spec.mode == "baseline":
            self.remeasure()
            return
        if spec.mode == "calibration":
            self.calibrate()
            return
        violation = check_submission_files(self.submission_dir)
        if violation:
            self.check("files", False, violation)
            self.events.result("failed", violation, "rule_violation")
            return
        self.check("files", True, "engine.py present; only allowed file types")
        self._open_reference()
        try:
            self.evaluate()
        except EngineFailure as exc:
            verdict.fail_early(self.events, exc, self.summaries, self.metrics)
        except EarlyVerdict as exc:
            verdict.stopped_at_first_rejected_token(self.events, exc, spec, self.summaries, self.metrics, self.nonce)

    def evaluate(self) -> None:
        spec, events = self.spec, self.events
        machine = hardware_name()
        hardware = hardware_key(machine)
        events.log(f"decode run: {spec.benchmark} ({spec.mode}), {len(spec.workloads)} workload(s), hardware {machine} (baseline key {hardware!r})")
        if self.nonce is not None and any(w.hidden for w in spec.workloads):
            events.log("hidden workloads: prompts drawn fresh for this run from a secret the engine never sees")
        ks = verdict.calibration_for(spec, hardware, events.log)
        ratios = None
        baseline_ms = None
        if spec.official:
            trusted = "reference" if ks else "baseline"
            min_pairs = spec.samples_per_workload
            max_pairs = max(min_pairs, spec.max_pairs or min_pairs)
            by_role, ratios = self.measure_paired(trusted, "candidate", min_pairs, max_pairs, spec.target_half_width_pct)
            records = by_role["candidate"]
            n = len(next(iter(ratios.values())))
            if not ks:
                # the eager baseline measured alongside: the hub caches its medians for public runs
                events.emit({"type": "baseline", "hardware": hardware, "workloads": verdict.baseline_figures(by_role["baseline"]),
                             "paired": True, "samples": n})
            basis = (f"paired with the reference engine ({n} pairs per workload)" if ks else
                     f"paired with the eager baseline measured alongside ({n} pairs per workload)")
        elif ks:
            # public with K: one pair per workload with the (steady) reference engine
            by_role, ratios = self.measure_paired("reference", "candidate", 1, 1, None)
            records = by_role["candidate"]
            basis = "one sample per workload paired with one of the reference engine"
        else:
            cached = spec.baseline
            if cached is None or any(w.name not in cached.total_ms for w in spec.workloads):
                n = spec.samples_per_workload
                events.log(f"no cached baseline: measuring the baseline engine on this machine first ({n} timed samples per workload)")
                figures = verdict.baseline_figures(self.measure("baseline", n))
                # Reported for the log and the record; the hub caches only official (paired) medians.
                events.emit({"type": "baseline", "hardware": hardware, "workloads": figures, "paired": False, "samples": n})
                baseline_ms = {name: f["totalMs"] for name, f in figures.items()}
                basis = f"one sample per workload against the baseline measured just before on this machine ({n} timed samples per workload)"
            else:
                if cached.hardware and cached.hardware != hardware:
                    events.log(f"cached baseline was measured on {cached.hardware}, this machine is {hardware}", "warn")
                baseline_ms = cached.total_ms
                basis = f"one sample per workload against the cached baseline medians of {cached.hardware or 'this hardware'}"
            records = self.measure("candidate", 1)
        self._summarise(records, baseline_ms, ratios, [ks[w.name].k for w in spec.workloads] if ks else None)
        failures = final_checks(self.events, spec.checks, self.output, official=spec.official, memory_limit=spec.limits.memory_bytes,
                                measurer_name=self.candidate_measurer.describe() if self.candidate_measurer else None, peak=self.peak, records=records, summaries=self.summaries,
                                metrics=self.metrics)
        verdict.conclude(self.events, spec, summaries=self.summaries, metrics=self.metrics, failures=failures, ratios=ratios,
                         ks=ks, hardware=hardware, basis=basis, nonce=self.nonce)

    def _summarise(self, records: dict, baseline_ms, ratios: Optional[dict] = None, ks: Optional[list] = None) -> None:
        summaries, metrics = verdict.summarise(self.spec, records, baseline_ms, ratios, ks)
        self.summaries.extend(summaries)
        self.metrics.update(metrics)


def run(spec: dict, submission_dir: str, events, **kwargs) -> None:
    decode = DecodeRun(spec, submission_dir, events, **kwargs)
    try:
        decode.run()
    except HarnessFailure as exc:
        events.log(exc.message, "error")
        events.result("failed", exc.message, exc.code, None, decode.summaries, decode.metrics, exc.detail)
    finally:
        for proc in decode.procs:
            proc.close()
        if decode.reference is not None:
            decode.reference.close()
        if decode.cache is not None:
            decode.cache.save_quietly()  # every engine child is gone: nothing writes to it any more
