"""Decode evaluation: baseline and candidate, correctness, limits, score.

Flow of one run (all in the trusted parent; engines run in untrusted children, see engineproc):
 1. Check the submission's files (allowed extensions, no links).
 2. Official runs (paired, see pairing.py): the trusted baseline engine (spec.baselineEngine) and
    the candidate each run in their own child, both loaded once (untimed). Per workload both get
    the warm-up samples, then timed samples alternate in pairs on the same prompts, AB, BA, AB, …
    Pairs are added in rounds (one per workload) from samplesPerWorkload up to maxPairs until the
    score's 95 % bootstrap interval is within targetHalfWidthPct. The baseline's medians go out as
    a `baseline` event (the hub caches them for public runs) and its tokens become the reference
    tokens for the same prompts.
 3. Public runs: one timed candidate sample per workload against spec.baseline (the hub's cache);
    when there is none, the baseline engine is measured first in its own child (samplesPerWorkload
    timed samples). The score is indicative.
 4. Output check: a token equal to the reference token at the same place is accepted (the
    reference tokens were themselves checked); otherwise the parent runs one teacher-forced
    forward of the reference model over prompt + the candidate's own tokens and accepts a token
    only where its logit is within checks.logitTolerance of the row's max. After a tie-accepted
    divergence, later tokens are judged against the candidate's own prefix, which is what the
    teacher-forced pass does.
 Baseline re-measures (mode "baseline", an organizer's request; no submission): only the trusted
    baseline engine runs, in its own child: warm-ups, then samplesPerWorkload (at least 10) timed
    samples per workload; its tokens must pass the reference model; the result carries the medians
    (`baseline`: hardware key, samples, workloads), which the hub caches under that key. No score.
 5. Memory (the candidate's child only), latency and timing stability of the paired ratios
    (official), then the score: 100 × geometric mean over workloads of the speed-up, which is the
    median over pairs of baseline totalMs ÷ candidate totalMs (official) or the cached baseline's
    totalMs ÷ the candidate's one sample (public).
"""
from __future__ import annotations

import math
import os
import platform
import statistics
import time
import traceback
from typing import Optional

from .engineproc import EngineFailure, EngineProcess, Sample
from ..events import RunFailure
from .memory import make_measurer
from ..spec import validate_decode_spec
from . import cpus as cpus_mod
from . import pairing
from .prompts import prompts as make_prompts

ALLOWED_EXTENSIONS = (".py", ".pyi", ".yaml", ".yml", ".json", ".toml", ".txt", ".md", ".cfg", ".ini")
FAILURE_ORDER = ("candidate_error", "timeout", "memory_limit", "incorrect_output", "latency_limit", "unstable_timing")


class HarnessFailure(RunFailure):
    """The evaluator (or its baseline) failed: never the candidate's fault."""


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


def open_reference(model: dict):
    if model["family"] == "toy":
        from .models.toy import ToyReference

        return ToyReference(model["path"])
    from .models.qwen3 import Qwen3Reference

    return Qwen3Reference(model["path"])


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


def hardware_key(name: str) -> str:
    """The one key baselines are cached and compared under: the GPU model name, or "cpu" for every
    CPU machine (the hub's baselineKey and the agent's capability report use the same rule)."""
    return "cpu" if name == "cpu" or name.startswith("cpu:") else name


def ms(ns: Optional[float]) -> Optional[float]:
    return None if ns is None else ns / 1e6


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def _limits_text(checks: dict) -> str:
    parts = [f"{label} ≤ {checks[key]:g} ms" for key, label in (("maxTtftMs", "TTFT"), ("maxTpotMs", "TPOT")) if checks[key] is not None]
    return ", ".join(parts) if parts else "the latency limits (none set)"


class Record:
    def __init__(self, workload: dict, sample_no: int, index: int, warmup: bool, prompts, sample: Sample, peak) -> None:
        self.workload, self.sample_no, self.index, self.warmup = workload, sample_no, index, warmup
        self.prompts, self.sample, self.peak = prompts, sample, peak

    def figures(self) -> dict:
        s = self.sample
        w = self.workload
        total = ms(s.total_ns)
        return {
            "ttftMs": ms(s.ttft_ns),
            "tpotMs": ms(s.tpot_ns),
            "totalMs": total,
            "tps": (w["batchSize"] * w["maxNewTokens"]) / (total / 1000.0) if total else None,
        }


class DecodeRun:
    def __init__(self, spec: dict, submission_dir: str, events, measurer_factory=make_measurer) -> None:
        self.spec = validate_decode_spec(spec)
        # The engine runs with its own folder as cwd: hand it absolute paths.
        spec["model"]["path"] = os.path.abspath(spec["model"]["path"])
        # The engines' sandboxes must see the model even where it lives under /tmp (harness/jail.py).
        os.environ["DRYFT_JAIL_READ"] = spec["model"]["path"]
        spec["baselineEngine"] = os.path.abspath(spec["baselineEngine"])
        self.submission_dir = os.path.abspath(submission_dir)
        self.events = events
        self.measurer_factory = measurer_factory
        self.started = time.perf_counter_ns()
        self.run_deadline = self.started + int(spec["limits"]["runSeconds"] * 1e9)
        self.reference = None
        self.summaries: list = []
        self.metrics: dict = {}
        self.procs: list = []
        self.measurer_name = None
        self.peak = None

    # -- measuring engines ------------------------------------------------------------------

    def _deadline(self, seconds: float, what: str) -> tuple[int, str]:
        own = time.perf_counter_ns() + int(seconds * 1e9)
        if own <= self.run_deadline:
            return own, f"{what} of {seconds:g} s"
        return self.run_deadline, f"the whole-run deadline (limits.runSeconds = {self.spec['limits']['runSeconds']:g} s)"

    def _open(self, engine_dir: str, role: str) -> EngineProcess:
        """Starts one engine's child and loads it (untimed). Memory is limited for the candidate
        only; the baseline's child is measured for the log but never judged."""
        limits = self.spec["limits"]
        measurer = self.measurer_factory(limits.get("memoryMeasure", "auto"))
        proc = EngineProcess(engine_dir, role, measurer, limits["memoryBytes"] if role == "candidate" else None)
        self.procs.append(proc)
        if role == "candidate":
            self.measurer_name = measurer.name if measurer.applicable else None
        proc.start()
        t = time.perf_counter()
        deadline, text = self._deadline(limits["loadSeconds"], "limits.loadSeconds")
        proc.load(self.spec["model"]["path"], deadline, text)
        load_s = time.perf_counter() - t
        self.events.log(f"{role}: Engine(model_path) ready in {load_s:.2f} s (untimed)")
        if role == "candidate":
            self.metrics["loadSeconds"] = load_s
        return proc

    def _sample(self, proc: EngineProcess, w: dict, sample_no: int, index: int, warmup: bool, note: str = "") -> Record:
        limits = self.spec["limits"]
        ids = make_prompts(w["seed"], sample_no, w["batchSize"], w["promptLength"], self.reference.prompt_vocab)
        deadline, text = self._deadline(limits["sampleSeconds"], "limits.sampleSeconds")
        sample = proc.generate(ids, w["maxNewTokens"], self.reference.vocab_size, deadline, text)
        rec = Record(w, sample_no, index, warmup, ids, sample, proc.peak_memory)
        fig = rec.figures()
        if proc.role == "candidate":
            self.events.emit({
                "type": "sample", "workload": w["name"], "index": index, "warmup": warmup,
                **fig, "tokens": w["batchSize"] * w["maxNewTokens"], "batchSize": w["batchSize"],
                "promptLength": w["promptLength"], "peakMemoryBytes": proc.peak_memory,
            })
        tpot = "—" if fig["tpotMs"] is None else f"{fig['tpotMs']:.3f}"
        self.events.log(
            f"{proc.role} {w['name']} {'warm-up' if warmup else 'sample'} {index}{note}: total {fig['totalMs']:.2f} ms, "
            f"TTFT {fig['ttftMs']:.2f} ms, TPOT {tpot} ms"
        )
        return rec

    def measure(self, engine_dir: str, role: str, timed: int) -> dict:
        """One engine alone (public runs): warm-ups then `timed` samples per workload."""
        spec = self.spec
        records: dict = {w["name"]: [] for w in spec["workloads"]}
        proc = self._open(engine_dir, role)
        try:
            for w in spec["workloads"]:
                plan = [(True, i) for i in range(spec["warmupSamples"])] + [(False, i) for i in range(timed)]
                for sample_no, (warmup, index) in enumerate(plan):
                    records[w["name"]].append(self._sample(proc, w, sample_no, index, warmup))
        finally:
            proc.close()
        self.peak = proc.peak_memory
        return records

    def measure_paired(self) -> tuple[dict, dict, dict]:
        """Official runs: baseline and candidate in two children, timed samples in pairs.

        Returns (baseline records, candidate records, ratios per workload). A failure of the
        baseline's child is the evaluator's (HarnessFailure); one of the candidate's is an
        EngineFailure against it."""
        spec, events = self.spec, self.events
        workloads = spec["workloads"]
        min_pairs = spec["samplesPerWorkload"]
        max_pairs = max(min_pairs, spec.get("maxPairs") or min_pairs)
        target = spec.get("targetHalfWidthPct")
        warm = spec["warmupSamples"]
        base_recs: dict = {w["name"]: [] for w in workloads}
        cand_recs: dict = {w["name"]: [] for w in workloads}
        ratios: dict = {w["name"]: [] for w in workloads}

        def baseline_step(fn):
            try:
                return fn()
            except EngineFailure as exc:
                raise HarnessFailure("harness_error", f"The baseline engine failed ({exc.code}): {exc.message}", exc.detail)

        base = baseline_step(lambda: self._open(os.path.abspath(spec["baselineEngine"]), "baseline"))
        cand = self._open(self.submission_dir, "candidate")
        procs = {"baseline": base, "candidate": cand}
        try:
            events.log(
                f"paired measurement: {min_pairs} to {max_pairs} pairs per workload"
                + (f", until the pairs' 95 % bootstrap interval is within ±{target:g} %" if target and max_pairs > min_pairs else "")
                + (f"; the reported interval adds this benchmark's run-to-run spread of {spec['runSpreadPct']:g} %"
                   if spec.get("runSpreadPct") else "")
                + "; each pair is one baseline and one candidate sample on the same prompts, in the order AB, BA, AB, …"
            )
            for w in workloads:
                for i in range(warm):
                    for role in pairing.order(i):
                        rec = self._sample(procs[role], w, i, i, True) if role == "candidate" else baseline_step(lambda: self._sample(base, w, i, i, True))
                        (cand_recs if role == "candidate" else base_recs)[w["name"]].append(rec)
            pairs = 0
            hw = None
            round_s = 0.0
            while pairing.more_pairs(pairs, min_pairs, max_pairs, hw, target):
                if pairs >= min_pairs and time.perf_counter_ns() + int(2 * round_s * 1e9) > self.run_deadline:
                    events.log(f"stopping at {pairs} pairs: another round would come too close to the whole-run deadline", "warn")
                    break
                t0 = time.perf_counter()
                p = pairs
                for w in workloads:
                    got = {}
                    ab = "".join("B" if r == "baseline" else "C" for r in pairing.order(p))
                    for role in pairing.order(p):
                        note = f" (pair {p}, {ab})"
                        if role == "candidate":
                            got[role] = self._sample(cand, w, warm + p, p, False, note)
                        else:
                            got[role] = baseline_step(lambda: self._sample(base, w, warm + p, p, False, note))
                    base_recs[w["name"]].append(got["baseline"])
                    cand_recs[w["name"]].append(got["candidate"])
                    r = got["baseline"].figures()["totalMs"] / got["candidate"].figures()["totalMs"]
                    ratios[w["name"]].append(r)
                    events.log(f"pair {p} {w['name']}: baseline/candidate = {r:.4f}")
                pairs += 1
                round_s = time.perf_counter() - t0
                if pairs >= min_pairs:
                    per = [ratios[w["name"]] for w in workloads]
                    point = pairing.score(per)
                    low, high = pairing.bootstrap_interval(per, self.bootstrap_seed())
                    hw = pairing.half_width_pct(low, high, point)
                    events.log(f"after {pairs} pairs: score {point:.2f}, the pairs' 95 % interval {low:.2f}–{high:.2f} (±{hw:.2f} %)")
        finally:
            base.close()
            cand.close()
        self.peak = cand.peak_memory
        return base_recs, cand_recs, ratios

    def bootstrap_seed(self) -> str:
        return f"{self.spec['benchmark']}:{','.join(w['name'] for w in self.spec['workloads'])}"

    def check(self, name: str, passed: bool, detail: str) -> None:
        """A check event, and its verdict in the run log."""
        self.events.check(name, passed, detail)
        self.events.log(f"check {name}: {'passed' if passed else 'FAILED'}: {detail}", "info" if passed else "warn")

    @staticmethod
    def baseline_figures(records: dict) -> dict:
        figures = {}
        for name, recs in records.items():
            timed = [r.figures() for r in recs if not r.warmup]
            figures[name] = {k: median([f[k] for f in timed]) or 0.0 for k in ("totalMs", "ttftMs", "tpotMs")}
        return figures

    # -- the run -------------------------------------------------------------------------------

    def remeasure(self) -> None:
        """Baseline re-measure: the trusted baseline engine alone, its medians in the result."""
        spec, events = self.spec, self.events
        self.reference = open_reference(spec["model"])
        machine = hardware_name()
        hardware = hardware_key(machine)
        n = spec["samplesPerWorkload"]
        events.log(f"baseline re-measure: {spec['benchmark']}, {len(spec['workloads'])} workload(s), {n} timed samples each, "
                   f"hardware {machine} (baseline key {hardware!r}); no submission runs")
        try:
            records = self.measure(spec["baselineEngine"], "baseline", n)
        except EngineFailure as exc:
            raise HarnessFailure("harness_error", f"The baseline engine failed ({exc.code}): {exc.message}", exc.detail)
        # Its tokens must be the reference model's, as when they serve as an official run's reference.
        self.verify({}, records)
        for key in ("sequencesOffBaseline", "maxAcceptedLogitDeficit"):  # figures of a candidate: none here
            self.metrics.pop(key, None)
        workloads = self.baseline_figures(records)
        self.summarise(records, {"workloads": workloads})
        for s in self.summaries:
            s["speedup"] = None  # no candidate: nothing is compared
        self.check("output", True, f"every token of the baseline's {sum(len(r) for r in records.values())} sample(s) is the reference model's greedy choice")
        text = f"Baseline re-measured on {hardware}: medians of {n} timed samples per workload (no score; the hub caches them for this hardware)"
        events.log(f"verdict: succeeded. {text}")
        events.result("succeeded", text, None, None, self.summaries, self.metrics,
                      baseline={"hardware": hardware, "samples": n, "workloads": workloads})

    def pin_cpus(self) -> None:
        try:
            cpus = cpus_mod.pin_from_env()
        except (ValueError, OSError) as exc:
            raise HarnessFailure("harness_error", f"{cpus_mod.ENGINE_CPUS_ENV}={os.environ.get(cpus_mod.ENGINE_CPUS_ENV)!r} cannot be used: {exc}. "
                                 "The agent sets it from slots[].cpus in its config; give CPUs this machine has.")
        if cpus:
            self.events.log(f"engine CPUs: {cpus} (the harness and every engine child, from the agent's slots[].cpus)")

    def run(self) -> None:
        spec, events = self.spec, self.events
        self.pin_cpus()
        if spec["mode"] == "baseline":
            self.remeasure()
            return
        official = spec["mode"] == "official"
        violation = check_submission_files(self.submission_dir)
        if violation:
            self.check("files", False, violation)
            events.result("failed", violation, "rule_violation")
            return
        self.check("files", True, "engine.py present; only allowed file types")
        self.reference = open_reference(spec["model"])
        machine = hardware_name()
        hardware = hardware_key(machine)
        events.log(f"decode run: {spec['benchmark']} ({spec['mode']}), {len(spec['workloads'])} workload(s), hardware {machine} (baseline key {hardware!r})")

        ratios = None
        if official:
            # 1. paired: baseline and candidate side by side on this machine
            try:
                baseline_records, records, ratios = self.measure_paired()
            except EngineFailure as exc:
                self.fail_early(exc)
                return
            n = len(next(iter(ratios.values())))
            baseline = {"hardware": hardware, "workloads": self.baseline_figures(baseline_records)}
            events.emit({"type": "baseline", **baseline, "paired": True, "samples": n})
        else:
            # 1. baseline figures (cached by the hub, or measured now on this machine)
            names = [w["name"] for w in spec["workloads"]]
            baseline = spec.get("baseline")
            baseline_records = None
            if baseline is None or any(n not in baseline["workloads"] for n in names):
                events.log(f"no cached baseline: measuring the baseline engine on this machine first ({spec['samplesPerWorkload']} timed samples per workload)")
                try:
                    baseline_records = self.measure(os.path.abspath(spec["baselineEngine"]), "baseline", spec["samplesPerWorkload"])
                except EngineFailure as exc:
                    raise HarnessFailure("harness_error", f"The baseline engine failed ({exc.code}): {exc.message}", exc.detail)
                baseline = {"hardware": hardware, "workloads": self.baseline_figures(baseline_records)}
                # Reported for the log and the record; the hub caches only official (paired) medians.
                events.emit({"type": "baseline", **baseline, "paired": False, "samples": spec["samplesPerWorkload"]})
            elif baseline.get("hardware") and baseline["hardware"] != hardware:
                events.log(f"cached baseline was measured on {baseline['hardware']}, this machine is {hardware}", "warn")
            # 2. candidate
            try:
                records = self.measure(self.submission_dir, "candidate", 1)
            except EngineFailure as exc:
                self.fail_early(exc)
                return
        self.summarise(records, baseline, ratios)
        cand_peak = self.peak

        # 3. output check
        failures: dict = {}
        bad = self.verify(records, baseline_records)
        if bad:
            failures["incorrect_output"] = bad
            self.check("output", False, bad[0])
        else:
            n = sum(len(r) for r in records.values())
            self.check("output", True, f"every token of {n} sample(s) is the reference model's greedy choice (logit tolerance {spec['checks']['logitTolerance']:g})")

        # 4. memory (the candidate's child only)
        limit = spec["limits"]["memoryBytes"]
        if self.measurer_name is None or limit is None:
            why = "no memory limit in this benchmark" if limit is None else "no way to measure the engine's memory on this machine"
            self.check("memory", True, f"not applicable: {why}" + (f"; peak {cand_peak} bytes" if cand_peak else ""))
        else:
            self.check("memory", True, f"peak {cand_peak} bytes ({self.measurer_name}) ≤ limit {int(limit)} bytes")
        if cand_peak is not None:
            self.metrics["peakMemoryBytes"] = cand_peak

        # 5. latency and stability (official runs)
        checks = spec["checks"]
        if official:
            over = []
            for name, recs in records.items():
                for r in recs:
                    if r.warmup:
                        continue
                    f = r.figures()
                    if checks["maxTtftMs"] is not None and f["ttftMs"] > checks["maxTtftMs"]:
                        over.append(f"{name} sample {r.index}: TTFT {f['ttftMs']:.2f} ms > {checks['maxTtftMs']:g} ms")
                    if checks["maxTpotMs"] is not None and f["tpotMs"] is not None and f["tpotMs"] > checks["maxTpotMs"]:
                        over.append(f"{name} sample {r.index}: TPOT {f['tpotMs']:.3f} ms > {checks['maxTpotMs']:g} ms")
            if over:
                failures["latency_limit"] = ("; ".join(over[:5]), None)
            self.check("latency", not over, "; ".join(over[:5]) if over else "every timed sample within " + _limits_text(checks))
            limit_pct = checks["maxRatioSpreadPct"]
            unstable = [f"{s['workload']}: spread of the paired ratios {s['ratioSpreadPct']:.2f}% > {limit_pct:g}%"
                        for s in self.summaries if s["ratioSpreadPct"] is not None and s["ratioSpreadPct"] > limit_pct]
            if unstable:
                failures["unstable_timing"] = ("; ".join(unstable), None)
            spreads = ", ".join(f"{s['workload']} {s['ratioSpreadPct']:.2f}%" for s in self.summaries if s["ratioSpreadPct"] is not None)
            self.check("timing_stability", not unstable, "; ".join(unstable) if unstable else
                       f"interquartile range ÷ median of the paired baseline/candidate ratios ≤ {limit_pct:g}%: {spreads}")

        # 6. verdict
        speedups = [s["speedup"] for s in self.summaries]
        score = 100.0 * math.exp(sum(math.log(x) for x in speedups) / len(speedups)) if all(speedups) else None
        interval = pairs = None
        if score is not None:
            self.metrics["measuredScore"] = score
            if ratios is not None:
                per = list(ratios.values())
                pairs = len(per[0])
                low, high = pairing.widen(*pairing.bootstrap_interval(per, self.bootstrap_seed()), score,
                                          self.spec.get("runSpreadPct"))
                interval = {"low": round(low, 4), "high": round(high, 4), "halfWidth": round((high - low) / 2, 4), "level": pairing.LEVEL}
        for code in FAILURE_ORDER:
            if code in failures:
                message, detail = failures[code]
                events.log(f"verdict: failed ({code})" + (f"; measured score {score:.2f}" if score is not None else ""), "warn")
                events.result("failed", message, code, None, self.summaries, self.metrics, detail, pairs=pairs, indicative=False if official else True)
                return
        if official:
            text = (f"Official score: {score:.2f} ± {interval['halfWidth']:.2f} (95 % interval {interval['low']:.2f}–{interval['high']:.2f}, "
                    f"{pairs} pairs per workload; 100 = the baseline measured alongside on {hardware})")
        else:
            text = (f"Public score (indicative: one sample against the cached baseline; feedback only, not ranked): {score:.2f} "
                    f"(100 = baseline on {baseline.get('hardware') or 'this hardware'})")
        events.log(f"verdict: succeeded. {text}")
        events.result("succeeded", text, None, round(score, 4), self.summaries, self.metrics,
                      interval=interval, pairs=pairs, indicative=not official)

    def fail_early(self, exc: EngineFailure) -> None:
        if exc.code == "memory_limit":
            self.check("memory", False, exc.message)
        self.events.log(f"verdict: failed ({exc.code})", "warn")
        self.events.result("failed", exc.message, exc.code, None, self.summaries, self.metrics, exc.detail)

    def summarise(self, records: dict, baseline: dict, ratios: Optional[dict] = None) -> None:
        parent_ns = child_ns = steps = 0
        child_known = True
        for w in self.spec["workloads"]:
            recs = [r for r in records[w["name"]] if not r.warmup]
            figs = [r.figures() for r in recs]
            tpots = [f["tpotMs"] for f in figs if f["tpotMs"] is not None]
            med_tpot = median(tpots)
            spread = (max(tpots) - min(tpots)) / med_tpot * 100.0 if len(tpots) >= 2 and med_tpot else None
            total = median([f["totalMs"] for f in figs])
            if ratios is not None:
                rs = ratios[w["name"]]
                speedup, ratio_spread = statistics.median(rs), pairing.spread_pct(rs)
            else:
                base = baseline["workloads"][w["name"]]["totalMs"]
                speedup, ratio_spread = (base / total if total else None), None
            self.summaries.append({
                "workload": w["name"], "samples": len(recs), "tps": median([f["tps"] for f in figs]),
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
            self.metrics["harnessParentUsPerStep"] = parent_ns / steps / 1000.0
            if child_known:
                self.metrics["harnessChildUsPerStep"] = child_ns / steps / 1000.0

    def verify(self, records: dict, baseline_records: Optional[dict]):
        """Returns None, or (message, detail) for the first rejected token."""
        tol = self.spec["checks"]["logitTolerance"]
        ref = self.reference
        events = self.events
        ref_tokens = {}
        if baseline_records is not None:
            # The baseline is trusted, but its tokens only serve as reference after the reference
            # model accepts them too: a disagreement here is the evaluator's problem.
            for name, recs in baseline_records.items():
                for r in recs:
                    outs = r.sample.sequences()
                    bad = ref.verify(r.prompts, outs, tol)
                    if bad:
                        raise HarnessFailure(
                            "harness_error",
                            f"The baseline engine's output disagrees with the reference model at workload {name}, sample {r.sample_no}, "
                            f"sequence {bad['sequence']}, step {bad['step']} (logit {bad['tokenLogit']} vs max {bad['maxLogit']}); "
                            "the logit tolerance is too tight for this hardware or the reference is broken.",
                        )
                    ref_tokens[(name, r.sample_no)] = outs
        ties = 0
        worst = 0.0
        for name, recs in records.items():
            for r in recs:
                outs = r.sample.sequences()
                expected = ref_tokens.get((name, r.sample_no))
                if expected == outs:
                    continue
                if expected is not None:
                    for s, (a, b) in enumerate(zip(outs, expected)):
                        if a != b:
                            t = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
                            if ties < 3:
                                events.log(f"{name} sample {r.sample_no}: sequence {s} leaves the baseline's tokens at step {t}; checking it against the reference model over its own tokens")
                            ties += 1
                bad = ref.verify(r.prompts, outs, tol)
                worst = max(worst, getattr(ref, "max_deficit", 0.0))
                if bad:
                    kind = "warm-up sample" if r.warmup else "sample"
                    message = (
                        f"Incorrect output in workload {name}, {kind} {r.index}: sequence {bad['sequence']}, step {bad['step']} "
                        f"produced token {bad['token']}, but the greedy choice is token {bad['best']}."
                    )
                    detail = (
                        f"workload {name}, {kind} {r.index}, sequence {bad['sequence']}, step {bad['step']} (0-based, step 0 is the first generated token)\n"
                        f"candidate token {bad['token']} has logit {bad['tokenLogit']}; the row's max is {bad['maxLogit']} at token {bad['best']}; "
                        f"accepted only within {tol:g} of the max (checks.logitTolerance)."
                    )
                    return message, detail
        if ties:
            events.log(f"{ties} sequence(s) differed from the baseline's tokens; every token was accepted by the teacher-forced check (within the tolerance)")
        self.metrics["sequencesOffBaseline"] = ties
        self.metrics["maxAcceptedLogitDeficit"] = worst
        return None


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
