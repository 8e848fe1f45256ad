"""Scores against the trusted reference engine (issue 29): K, the ranking and absolute intervals,
the fallback without K, fresh hidden prompts per official run, the first wrong token ending the run,
warm-ups that stop once settled, public runs paired with the reference, and calibration runs."""
import dataclasses
import json
import math
import os
import re
import sys

import pytest

from conftest import HARNESS, REPO, TOY_BASELINE, TOY_FAST, run_harness, toy_spec

sys.path.insert(0, str(HARNESS))
from harness.decode import pairing  # noqa: E402
from harness.decode.prompts import prompts  # noqa: E402
from harness.decode.runner import hardware_key, hardware_name  # noqa: E402
from harness.decode.spec import parse_decode_spec  # noqa: E402

TOY_REFERENCE = REPO / "harness" / "reference" / "toy"
HIDDEN = [{"name": "h-wide", "batchSize": 8, "promptLength": 32, "maxNewTokens": 16, "seed": 9101, "hidden": True},
          {"name": "h-deep", "batchSize": 2, "promptLength": 96, "maxNewTokens": 32, "seed": 9102, "hidden": True}]
HW = hardware_key(hardware_name())


def calibration(ks: dict, half_pct: float = 1.0) -> dict:
    f = 1 + half_pct / 100
    return {"hardware": HW, "halfWidthPct": half_pct, "pairs": 64, "runs": 2,
            "workloads": {n: {"k": k, "low": k / f, "high": k * f} for n, k in ks.items()}}


def official(**over) -> dict:
    spec = dict(workloads=HIDDEN, samplesPerWorkload=6, warmupSamples=1, maxPairs=12, targetHalfWidthPct=3,
                checks={"maxRatioSpreadPct": 10000}, baseline=None, referenceEngine=str(TOY_REFERENCE),
                calibration=calibration({"h-wide": 4.0, "h-deep": 9.0}))
    spec.update(over)
    return toy_spec("official", **spec)


# -- pure functions, seeded and exact ----------------------------------------------------------

def test_scaled_score_and_both_intervals_are_exact():
    per = [[1.0, 1.02, 0.98, 1.01], [2.0, 2.1, 1.9, 2.0]]
    ks = [4.0, 9.0]
    point = pairing.scaled_score(per, ks)
    # 100 × sqrt((4 × 1.005) × (9 × 2.0))
    assert math.isclose(point, 100 * math.sqrt(4 * 1.005 * 9 * 2.0), rel_tol=1e-12)
    low, high = pairing.bootstrap_interval(per, "seed")
    scale = pairing.geomean(ks)
    # K is shared by every team: the ranking interval is the pairs' own, scaled
    assert math.isclose(low * scale, pairing.bootstrap_interval(per, "seed")[0] * 6.0, rel_tol=1e-12)
    k_log = pairing.k_log_half_width([(4 / 1.01, 4 * 1.01), (9 / 1.03, 9 * 1.03)])
    assert math.isclose(k_log, (math.log(1.01) + math.log(1.03)) / 2, rel_tol=1e-12)
    a_low, a_high = pairing.widen_log(low * scale, high * scale, point, k_log)
    assert a_low < low * scale and a_high > high * scale
    assert math.isclose(math.log(point / a_low), math.hypot(math.log(point / (low * scale)), k_log), rel_tol=1e-12)
    assert pairing.widen_log(1.0, 2.0, 1.5, 0.0) == (1.0, 2.0)
    assert pairing.order(0, "reference", "candidate") == ("reference", "candidate")
    assert pairing.order(1, "reference", "candidate") == ("candidate", "reference")


def test_the_nonce_changes_prompts_and_public_seeds_stay_fixed():
    a = prompts(9101, 3, 2, 16, 256, "0" * 32)
    b = prompts(9101, 3, 2, 16, 256, "1" * 32)
    assert a != b and a == prompts(9101, 3, 2, 16, 256, "0" * 32)
    assert prompts(11, 0, 2, 16, 256) == prompts(11, 0, 2, 16, 256)


@pytest.mark.parametrize("over, words", [
    ({"mode": "calibration"}, "calibration run needs referenceEngine"),
    ({"promptNonce": "XYZ"}, "promptNonce must be null or 32 lowercase hex"),
    ({"calibration": {"hardware": "cpu", "workloads": {"w": {"k": 2.0, "low": 2.5, "high": 3.0}}}}, "low <= k <= high"),
    ({"calibration": {"hardware": "cpu", "workloads": {"w": {"k": 2.0, "low": 1.5}}}}, "calibration.workloads.w.high is missing"),
    ({"mode": "calibration", "referenceEngine": "/x"}, "calibration run needs calibrate"),
    ({"mode": "calibration", "referenceEngine": "/x", "calibrate": {"targetHalfWidthPct": 1, "maxPairs": 1, "budgetSeconds": 5}},
     "calibrate.maxPairs (1) must be at least samplesPerWorkload (2)"),
    ({"workloads": [{"name": "w", "batchSize": 1, "promptLength": 4, "maxNewTokens": 2, "seed": 1, "hidden": "yes"}]}, "hidden must be true or false"),
])
def test_spec_refusals_name_the_field(over, words):
    spec = toy_spec("official")
    spec.update(over)
    with pytest.raises(ValueError, match=words.replace("(", r"\(").replace(")", r"\)")):
        parse_decode_spec(spec)


def test_the_spec_is_parsed_once_into_frozen_attributes_and_the_json_is_left_as_sent():
    raw = toy_spec("official", referenceEngine="starters/toy-decode/engine", promptNonce="ab" * 16,
                   workloads=[{"name": "w", "batchSize": 2, "promptLength": 32, "maxNewTokens": 8, "seed": 7}],
                   calibration={"hardware": "cpu", "halfWidthPct": 1.0, "pairs": 40, "runs": 2,
                                "workloads": {"w": {"k": 2.0, "low": 1.9, "high": 2.1}}})
    sent = json.dumps(raw, sort_keys=True)
    spec = parse_decode_spec(raw)
    assert json.dumps(raw, sort_keys=True) == sent  # no defaults written into the hub's JSON
    w = spec.workloads[0]
    assert (w.name, w.batch_size, w.tokens, w.hidden) == ("w", 2, 16, False)  # hidden defaults to false
    assert spec.limits.memory_measure == "auto" and spec.checks.max_ratio_spread_pct == 50
    assert spec.max_pairs is None and spec.calibrate is None and spec.prompt_nonce == "ab" * 16
    assert spec.calibration.workloads["w"].k == 2.0 and spec.calibration.pairs == 40
    assert spec.baseline.total_ms["w"] == 5.0
    assert os.path.isabs(spec.reference_engine) and os.path.isabs(spec.model.path)
    assert spec.bootstrap_seed == "toy-decode:w"
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.mode = "public"
    with pytest.raises(TypeError):
        spec.calibration.workloads["w"] = None


# -- runs through the real entry point ---------------------------------------------------------

def test_official_against_the_reference_scores_in_baseline_points(tmp_path):
    # The fast example is the reference's own code: against it, ratios ≈ 1, so the score is ≈ 100 × geomean(K).
    run = run_harness(official(), TOY_FAST, tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    assert res["scoring"]["against"] == "reference" and res["scoring"]["calibrated"] is True
    assert math.isclose(res["scoring"]["kHalfWidthPct"], 1.0, rel_tol=1e-3)
    # millisecond samples on a shared, loaded CI box: loose bounds, and the interval holding 600 with a margin
    assert 600 * 0.6 < res["score"] < 600 * 1.6, res
    rank, absolute = res["interval"], res["absoluteInterval"]
    assert rank["low"] <= res["score"] <= rank["high"] and rank["low"] * 0.8 <= 600 <= rank["high"] * 1.25, rank
    assert absolute["low"] < rank["low"] and absolute["high"] > rank["high"]
    assert "ranking interval" in res["message"] and "absolute" in res["message"] and "reference engine" in res["message"]
    # no eager baseline ran: no baseline figures for the hub's cache, no baseline samples in the log
    assert not run.of("baseline")
    logs = [e["message"] for e in run.of("log")]
    assert not any(m.startswith("baseline ") for m in logs) and any(m.startswith("reference h-wide sample") for m in logs)
    # where the run's (GPU) time went, in one line of the log: its parts never more than the whole
    account = next(m for m in logs if m.startswith("GPU time so far"))
    wall = float(account.split()[4])
    named = [float(x) for x in re.findall(r"([0-9.]+) s(?! timed| in)", account.split(": ", 1)[1])]
    assert "reference" in account and "candidate" in account and "output checks" in account, account
    assert wall > 0 and all(x >= 0 for x in named), account
    timed = [float(x) for x in re.findall(r"([0-9.]+) s timed", account)]
    assert len(timed) == 2 and sum(timed) < wall, account
    # one switch between the engines per pair (pairing.round_order): the timed samples in the order
    # they ran change engine only inside a pair, never between two
    ran = [m.split()[0] for m in logs if re.match(r"(reference|candidate) h-\w+ sample \d+ \(pair", m)]
    assert len(ran) == 2 * res["pairs"] * len(HIDDEN), ran
    assert sum(a != b for a, b in zip(ran, ran[1:])) == res["pairs"] * len(HIDDEN), ran
    # the per-run secret is in the result for the hub (organizers only) and nowhere else
    nonce = res["promptNonce"]
    assert len(nonce) == 32 and nonce not in run.stdout + run.stderr
    assert not any(nonce in json.dumps(e) for e in run.events[:-1])


PROMPT_PRINTER = """
    import hashlib
    from base import Engine as Base
    class Engine(Base):
        def generate(self, input_ids, max_new_tokens):
            print("PROMPTS", hashlib.sha256(repr(input_ids).encode()).hexdigest(), flush=True)
            yield from super().generate(input_ids, max_new_tokens)
"""


def printed(run) -> list:
    return [line.split()[1] for line in run.stdout.splitlines() if line.startswith("PROMPTS")]


def test_hidden_prompts_are_fresh_in_every_official_run(tmp_path, make_engine):
    d = make_engine(PROMPT_PRINTER)
    small = dict(samplesPerWorkload=2, maxPairs=2, targetHalfWidthPct=None)
    a = run_harness(official(**small), d, tmp_path)
    b = run_harness(official(**small), d, tmp_path)
    assert a.result["status"] == b.result["status"] == "succeeded"
    assert a.result["promptNonce"] != b.result["promptNonce"]
    assert printed(a) and set(printed(a)).isdisjoint(printed(b))
    # an organizer's audit re-run with the first run's nonce sees exactly its prompts again
    again = run_harness(official(promptNonce=a.result["promptNonce"], **small), d, tmp_path)
    assert printed(again) == printed(a) and again.result["promptNonce"] == a.result["promptNonce"]
    # public workloads (not hidden) stay the same from run to run
    pub = dict(referenceEngine=str(TOY_REFERENCE), calibration=calibration({"w": 3.0}))
    p1, p2 = (run_harness(toy_spec("public", **pub), d, tmp_path) for _ in range(2))
    assert printed(p1) and printed(p1) == printed(p2) and "promptNonce" not in p1.result


def test_the_first_wrong_token_ends_the_run(tmp_path, make_engine):
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for t, step in enumerate(super().generate(input_ids, max_new_tokens)):
                    if t == 2:
                        step = list(step)
                        step[0] = (step[0] + 1) % self.V
                    yield step
    """)
    run = run_harness(official(maxPairs=24), d, tmp_path)
    res = run.result
    assert res["failureCode"] == "incorrect_output", res
    assert "warm-up sample 0" in res["message"] and "step 2" in res["message"]
    logs = [e["message"] for e in run.of("log")]
    # judged at warm-up 0 of the first workload: no pair was timed, the second workload never ran
    assert not any("(pair " in m for m in logs) and not any(m.startswith(("candidate h-deep", "reference h-deep")) for m in logs)
    assert not run.check("output")["passed"]


def test_without_k_the_run_pairs_with_the_baseline_and_says_so(tmp_path):
    for cal in (None, {**calibration({"h-wide": 4.0, "h-deep": 9.0}), "hardware": "NVIDIA Elsewhere"},
                calibration({"h-wide": 4.0})):
        run = run_harness(official(calibration=cal, samplesPerWorkload=2, maxPairs=2), TOY_FAST, tmp_path)
        res = run.result
        assert res["status"] == "succeeded", res
        assert res["scoring"]["against"] == "baseline" and res["scoring"]["calibrated"] is False
        assert res.get("absoluteInterval") is None and run.of("baseline")[0]["paired"] is True
        warn = [e["message"] for e in run.of("log") if e["message"].startswith("scoring: against the baseline engine")]
        assert warn, [e["message"] for e in run.of("log")]
        assert "eager baseline" in res["message"]


def test_public_run_pairs_one_sample_with_the_reference(tmp_path):
    spec = toy_spec("public", referenceEngine=str(TOY_REFERENCE), calibration=calibration({"w": 3.0}), baseline=None, warmupSamples=1)
    run = run_harness(spec, TOY_FAST, tmp_path)
    res = run.result
    assert res["status"] == "succeeded" and res["indicative"] is True, res
    assert 300 * 0.4 < res["score"] < 300 * 2.5  # one pair of millisecond samples on a loaded box: indicative
    assert res["scoring"]["against"] == "reference" and "reference engine" in res["message"]
    logs = [e["message"] for e in run.of("log")]
    assert sum(m.startswith("reference w sample") for m in logs) == 1 and sum(m.startswith("candidate w sample") for m in logs) == 1
    assert not any("no cached baseline" in m for m in logs)


@pytest.mark.parametrize("cached", [True, False])
def test_public_fallback_messages_say_what_was_measured(tmp_path, cached):
    spec = toy_spec("public") if cached else toy_spec("public", baseline=None)
    res = run_harness(spec, TOY_FAST, tmp_path).result
    assert res["status"] == "succeeded", res
    if cached:
        assert "against the cached baseline medians" in res["message"] and "measured just before" not in res["message"]
    else:
        assert "against the baseline measured just before on this machine (2 timed samples per workload)" in res["message"]
        assert "cached" not in res["message"]


def test_warm_ups_stop_once_settled(tmp_path):
    run = run_harness(official(warmupSamples=6, samplesPerWorkload=2, maxPairs=2), TOY_FAST, tmp_path)
    assert run.result["status"] == "succeeded", run.result
    warm = [e for e in run.of("sample") if e["warmup"] and e["workload"] == "h-deep"]
    settled = [e["message"] for e in run.of("log") if "warm-ups settled after" in e["message"]]
    # a steady engine on a quiet enough machine settles in a few; never more than the cap
    assert 2 <= len(warm) <= 6
    if len(warm) < 6:
        assert any(m.startswith("candidate h-deep: warm-ups settled after") for m in settled)


def test_calibration_run_reports_its_pairs(tmp_path):
    spec = toy_spec("calibration", workloads=[{**w, "hidden": False} for w in HIDDEN], samplesPerWorkload=4,
                    warmupSamples=1, baseline=None, referenceEngine=str(TOY_REFERENCE),
                    calibrate={"targetHalfWidthPct": 50, "maxPairs": 8, "budgetSeconds": 120})
    run = run_harness(spec, tmp_path / "nothing", tmp_path)
    res = run.result
    assert res["status"] == "succeeded" and res["score"] is None, res
    cal = res["calibration"]
    assert cal["hardware"] == HW and cal["pairs"] == res["pairs"] and 4 <= cal["pairs"] <= 8
    assert set(cal["workloads"]) == {"h-wide", "h-deep"}
    for name, w in cal["workloads"].items():
        assert len(w["ratios"]) == cal["pairs"] and all(r > 1 for r in w["ratios"]), (name, w)  # the baseline is slower
    assert cal["seconds"] > 0 and cal["halfWidthPct"] > 0 and "Calibrated on" in res["message"]
    assert not run.of("sample")  # no candidate
    logs = [e["message"] for e in run.of("log")]
    assert any(m.startswith("baseline h-wide sample 0 (pair 0, AB)") for m in logs)
    assert any(m.startswith("reference h-wide sample 1 (pair 1, BA)") for m in logs)


def test_calibration_stops_at_its_budget(tmp_path):
    spec = toy_spec("calibration", samplesPerWorkload=2, warmupSamples=0, baseline=None, referenceEngine=str(TOY_REFERENCE),
                    calibrate={"targetHalfWidthPct": 0.0001, "maxPairs": 400, "budgetSeconds": 3})
    run = run_harness(spec, tmp_path / "nothing", tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    assert 2 <= res["calibration"]["pairs"] < 400
    assert any("would pass the budget of 3 s" in e["message"] for e in run.of("log"))


# -- the reference's shorter clock (samples.referenceTokensPct) -------------------------------------

LONG = [{"name": "h-long", "batchSize": 2, "promptLength": 32, "maxNewTokens": 80, "seed": 9103, "hidden": True}]


def test_reference_steps_shorten_the_reference_alone():
    from harness.decode.runner import REFERENCE_MIN_STEPS, reference_steps
    spec = parse_decode_spec(toy_spec("official", referenceTokensPct=50, referenceEngine=str(TOY_REFERENCE)))
    w = lambda n: parse_decode_spec(toy_spec("official", workloads=[{"name": "w", "batchSize": 1, "promptLength": 4,
                                                                     "maxNewTokens": n, "seed": 1}])).workloads[0]
    assert reference_steps(spec, "reference", w(256)) == 128
    assert reference_steps(spec, "reference", w(81)) == 41  # rounded up
    assert reference_steps(spec, "reference", w(48)) == REFERENCE_MIN_STEPS == 32  # its step time must stay readable
    assert reference_steps(spec, "reference", w(32)) is None and reference_steps(spec, "reference", w(8)) is None
    # every other engine always runs whole samples
    assert reference_steps(spec, "candidate", w(256)) is None and reference_steps(spec, "baseline", w(256)) is None
    whole = parse_decode_spec(toy_spec("official", referenceEngine=str(TOY_REFERENCE)))
    assert whole.reference_tokens_pct == 100 and reference_steps(whole, "reference", w(256)) is None


@pytest.mark.parametrize("value, words", [(0, "referenceTokensPct must be positive"), (150, r"referenceTokensPct must be within \(0, 100\]"),
                                          ("half", "referenceTokensPct must be a number")])
def test_reference_tokens_pct_refusals_name_the_field(value, words):
    with pytest.raises(ValueError, match=words):
        parse_decode_spec(toy_spec("official", referenceTokensPct=value))


def test_begins_compares_each_sequence_as_far_as_the_shorter_goes():
    from harness.decode.checks import begins
    assert begins([[1, 2], [3]], [[1, 2, 5], [3, 4]]) and begins([[1]], [[1]])
    assert not begins([[1, 3]], [[1, 2, 5]]) and not begins([[1, 2, 5]], [[1, 2]])
    assert not begins([[1]], [[1], [2]]) and not begins(None, [[1]]) and not begins([[1]], None)


def test_official_with_the_shorter_reference_clock(tmp_path):
    run = run_harness(official(workloads=LONG, referenceTokensPct=50, samplesPerWorkload=4, maxPairs=4,
                               calibration=calibration({"h-long": 2.0})), TOY_FAST, tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    logs = [e["message"] for e in run.of("log")]
    ref = [m for m in logs if m.startswith("reference h-long")]
    cand = [m for m in logs if m.startswith("candidate h-long")]
    # every reference sample, warm-ups included, is its first 40 of 80 steps; no candidate sample is shortened
    assert ref and all(m.endswith("(its first 40 of 80 steps)") for m in ref), ref
    assert cand and not any("its first" in m for m in cand), cand
    assert any("each stops after 40 of 80 steps (h-long)" in m for m in logs), logs
    # every token of the candidate's samples was judged, past the reference's 40 too (one pass a pair)
    assert run.check("output")["passed"] and res["metrics"]["sequencesOffBaseline"] == 0
    # the candidate is the reference's own code: half its time per pair, so the score is about 100 × K ÷ 2
    assert 100 * 0.5 < res["score"] < 100 * 2.0, res
    assert all(s["totalMs"] is not None for s in run.of("sample"))


def test_a_wrong_token_past_the_reference_clock_fails_the_run(tmp_path, make_engine):
    # Step 60 lies past the reference's 40 steps: its tokens cannot vouch for it, the teacher-forced pass must.
    d = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for t, step in enumerate(super().generate(input_ids, max_new_tokens)):
                    if t == 60:
                        step = list(step)
                        step[1] = (step[1] + 1) % self.V
                    yield step
    """)
    run = run_harness(official(workloads=LONG, referenceTokensPct=50, calibration=calibration({"h-long": 2.0})), d, tmp_path)
    res = run.result
    assert res["failureCode"] == "incorrect_output", res
    assert "warm-up sample 0" in res["message"] and "sequence 1, step 60" in res["message"], res["message"]
    assert not any("(pair " in e["message"] for e in run.of("log"))


def test_calibration_times_the_reference_as_official_runs_do(tmp_path):
    spec = toy_spec("calibration", workloads=[{**w, "hidden": False} for w in LONG], samplesPerWorkload=2, warmupSamples=1,
                    baseline=None, referenceEngine=str(TOY_REFERENCE), referenceTokensPct=50,
                    calibrate={"targetHalfWidthPct": 50, "maxPairs": 4, "budgetSeconds": 120})
    run = run_harness(spec, tmp_path / "nothing", tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    logs = [e["message"] for e in run.of("log")]
    assert all(m.endswith("(its first 40 of 80 steps)") for m in logs if m.startswith("reference h-long"))
    assert not any("its first" in m for m in logs if m.startswith("baseline h-long"))
    assert "every token of the baseline's and the reference engine's" in run.check("output")["detail"]
