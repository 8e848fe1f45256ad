"""toy-decode through the real harness (no torch anywhere): the happy paths and the spec handling."""
import json
import random
import sys
import time

import pytest

from conftest import TOY_BASELINE, TOY_FAST, TOY_MODEL, HARNESS, run_harness, toy_spec

sys.path.insert(0, str(HARNESS))
from harness.decode.models.toy import ToyReference, generate, load  # noqa: E402

PUBLIC_WORKLOADS = [
    {"name": "short", "batchSize": 4, "promptLength": 64, "maxNewTokens": 24, "seed": 11},
    {"name": "long", "batchSize": 1, "promptLength": 192, "maxNewTokens": 48, "seed": 12},
]


def test_shipped_weights_are_the_seeded_ones():
    assert load(str(TOY_MODEL)) == json.loads(json.dumps(generate()))


def test_engines_match_reference_greedy():
    import importlib.util

    ref = ToyReference(str(TOY_MODEL))
    rng = random.Random(3)
    prompts = [[rng.randrange(ref.vocab_size) for _ in range(20)] for _ in range(3)]
    expected = [ref.greedy(p, 10) for p in prompts]
    for folder in (TOY_BASELINE, TOY_FAST):
        spec = importlib.util.spec_from_file_location(f"e{abs(hash(str(folder)))}", folder / "engine.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        steps = list(mod.Engine(str(TOY_MODEL)).generate(prompts, 10))
        assert [[s[i] for s in steps] for i in range(3)] == expected
    # tolerance 0 rejects any other token
    wrong = [row[:] for row in expected]
    wrong[1][4] = (wrong[1][4] + 1) % ref.vocab_size
    bad = ref.verify(prompts, wrong, 0)
    assert bad["sequence"] == 1 and bad["step"] == 4


def test_public_run_fast_example_measures_baseline_and_scores(tmp_path):
    spec = toy_spec("public", workloads=PUBLIC_WORKLOADS, samplesPerWorkload=5, warmupSamples=1, baseline=None)
    run = run_harness(spec, TOY_FAST, tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    base = run.of("baseline")
    assert len(base) == 1 and set(base[0]["workloads"]) == {"short", "long"}
    for fig in base[0]["workloads"].values():
        # a few tens of ms on an idle core; loose bounds, since a shared test box can be 10x slower
        assert 1 <= fig["totalMs"] <= 5000
    samples = run.of("sample")
    # public: warm-up + one timed sample per workload
    assert [(s["workload"], s["warmup"]) for s in samples] == [("short", True), ("short", False), ("long", True), ("long", False)]
    assert res["score"] > 200, res
    assert res["indicative"] is True and "interval" not in res
    assert run.check("output")["passed"]
    assert run.seconds < 60


def test_official_baseline_scores_about_100(tmp_path):
    # Stability has its own test (test_cheats); the CI box is shared, so a wide spread limit and
    # wide score bounds here: this checks the official path and the formula, not the machine.
    spec = toy_spec("official", workloads=PUBLIC_WORKLOADS[:1], samplesPerWorkload=5, warmupSamples=1, baseline=None,
                    checks={"maxRatioSpreadPct": 10000})
    run = run_harness(spec, TOY_BASELINE, tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    assert 50 < res["score"] < 200, res
    assert run.check("timing_stability")["passed"]
    assert [s["index"] for s in run.of("sample") if not s["warmup"]] == [0, 1, 2, 3, 4]


def test_cached_baseline_is_used_without_measuring(tmp_path):
    run = run_harness(toy_spec("public"), TOY_FAST, tmp_path)
    assert run.result["status"] == "succeeded"
    assert not run.of("baseline")
    w = run.result["workloads"][0]
    assert abs(w["speedup"] - 5.0 / w["totalMs"]) < 1e-9


def test_bad_spec_is_a_harness_error(tmp_path):
    spec = toy_spec("public")
    del spec["limits"]["sampleSeconds"]
    run = run_harness(spec, TOY_FAST, tmp_path)
    assert run.result["failureCode"] == "harness_error"
    assert "limits.sampleSeconds" in run.result["message"] or "limits.sampleSeconds" in run.result.get("detail", "")


@pytest.mark.parametrize("value", [-1, "1.25"])
def test_bad_run_spread_is_a_harness_error_naming_the_field(tmp_path, value):
    spec = toy_spec("public", runSpreadPct=value)
    run = run_harness(spec, TOY_FAST, tmp_path)
    assert run.result["failureCode"] == "harness_error"
    assert "spec.runSpreadPct" in run.result.get("detail", ""), run.result


def test_disallowed_file_type_is_a_rule_violation(tmp_path, make_engine):
    d = make_engine("from base import Engine\n")
    (d / "kernel.so").write_bytes(b"\x7fELF")
    run = run_harness(toy_spec("public"), d, tmp_path)
    assert run.result["failureCode"] == "rule_violation"
    assert "kernel.so" in run.result["message"]
