"""Baseline re-measure (spec mode "baseline"): the trusted baseline engine alone, in its own child,
its medians in the result for the hub's cache; no submission is read and nothing is scored."""
import sys

from conftest import HARNESS, run_harness, toy_spec

sys.path.insert(0, str(HARNESS))
from harness.decode.runner import hardware_key, hardware_name  # noqa: E402

TWO = [{"name": "w", "batchSize": 2, "promptLength": 32, "maxNewTokens": 8, "seed": 7},
       {"name": "v", "batchSize": 1, "promptLength": 48, "maxNewTokens": 6, "seed": 8}]


def remeasure_spec(**over):
    return toy_spec("baseline", **{"workloads": TWO, "samplesPerWorkload": 10, "warmupSamples": 1, "baseline": None, **over})


def test_remeasure_times_only_the_baseline_and_reports_its_medians(tmp_path):
    empty = tmp_path / "workspace"
    empty.mkdir()  # what the agent hands over: no submission at all
    run = run_harness(remeasure_spec(), empty, tmp_path)
    res = run.result
    assert res["status"] == "succeeded" and res["failureCode"] is None, res
    assert res["score"] is None and "interval" not in res and "pairs" not in res and "indicative" not in res
    measured = res["baseline"]
    assert measured["hardware"] == hardware_key(hardware_name()) and measured["samples"] == 10
    assert set(measured["workloads"]) == {"w", "v"}
    for fig in measured["workloads"].values():
        assert fig["totalMs"] > 0 and fig["ttftMs"] >= 0 and fig["tpotMs"] >= 0
    # per workload: 10 timed baseline samples behind each median, nothing compared with anything
    assert [(s["workload"], s["samples"], s["speedup"]) for s in res["workloads"]] == [("w", 10, None), ("v", 10, None)]
    for s in res["workloads"]:
        assert s["totalMs"] == measured["workloads"][s["workload"]]["totalMs"]
    # only the baseline's child ran: no candidate samples, no paired or cached-baseline event
    assert not run.of("sample") and not run.of("baseline")
    logs = [e["message"] for e in run.of("log")]
    assert any(m.startswith("baseline: Engine(model_path) ready") for m in logs)
    assert not any(m.startswith("candidate") for m in logs)
    assert sum(m.startswith("baseline w sample") for m in logs) == 10
    assert sum(m.startswith("baseline v warm-up") for m in logs) == 1
    assert [c["name"] for c in run.of("check")] == ["output"] and run.of("check")[0]["passed"]
    assert logs[-1].startswith("verdict: succeeded. Baseline re-measured on")


def test_remeasure_needs_at_least_ten_samples(tmp_path):
    run = run_harness(remeasure_spec(samplesPerWorkload=9), tmp_path, tmp_path)
    res = run.result
    assert res["failureCode"] == "harness_error" and "baseline" not in res
    assert "samplesPerWorkload >= 10" in res["detail"]


def test_remeasure_baseline_failure_is_a_harness_error_and_caches_nothing(tmp_path, make_engine):
    broken = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                raise RuntimeError("baseline broke")
    """)
    run = run_harness(remeasure_spec(baselineEngine=str(broken)), tmp_path, tmp_path)
    res = run.result
    assert res["status"] == "failed" and res["failureCode"] == "harness_error", res
    assert "baseline engine failed" in res["message"] and "baseline" not in res


def test_remeasure_refuses_a_baseline_whose_tokens_the_reference_rejects(tmp_path, make_engine):
    wrong = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                for step in super().generate(input_ids, max_new_tokens):
                    yield [0 if t else 1 for t in step]  # never the greedy choice
    """)
    run = run_harness(remeasure_spec(baselineEngine=str(wrong)), tmp_path, tmp_path)
    res = run.result
    assert res["failureCode"] == "harness_error" and "disagrees with the reference model" in res["message"], res
    assert "baseline" not in res
