"""The sabotage of issue 29 through official toy-decode runs: an engine that wraps the unchanged
starter and forks three processes that burn the CPU only while it is idle (the baseline's samples)
scored 144-147 against ~100 for the starter. With the freezer it must score within the starter's
range or fail candidate_error; and the freezer's CPU accounting alone (a freezer whose stop does
nothing) must catch it while the honest starter, idle as it should be, passes."""
import json
import os

import pytest

from conftest import HARNESS, TOY_BASELINE, check_event, run_harness, toy_spec
from harness.decode import freezer, runner
from harness.events import EventWriter
from test_freezer import JAIL_PROBLEM

BURNER = (HARNESS / "tests" / "engines" / "toy_idle_burner.py").read_text()
WORKLOAD = {"name": "short", "batchSize": 4, "promptLength": 64, "maxNewTokens": 24, "seed": 11}
# The starter against the baseline (the same code) scores about 100, but on this shared box under
# load one run's pairs can be as wide as 77-255 (score 166), and the frozen burner read 78-120 (one
# 120.08, interval 108-127); unfrozen, the burners took it to 144-147 through the hub and to 195
# (109-214) and 244 (212-275) here. The starter's range: an interval that holds 100, or a score
# under HONEST_HIGH.
HONEST_HIGH = 130.0


def honest(res: dict) -> bool:
    return res["interval"]["low"] <= 100.0 or res["score"] < HONEST_HIGH


def official(**over):
    return toy_spec("official", workloads=[WORKLOAD], samplesPerWorkload=6, warmupSamples=1, baseline=None,
                    checks={"maxRatioSpreadPct": 10000}, **over)


def in_process(spec: dict, submission, tmp_path, monkeypatch):
    """One run in this process (so a test can patch the freezer), events through a file."""
    monkeypatch.setenv("DRYFT_JAIL_READ", "")  # the runner sets it; restored after the test
    spec["model"] = dict(spec["model"])
    path = tmp_path / f"events-{os.urandom(4).hex()}.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    events = EventWriter(fd)
    runner.run(spec, str(submission), events)
    events._file.close()
    out = [json.loads(line) for line in path.read_text().splitlines()]
    for e in out:
        check_event(e)
    return out


def burner(make_engine):
    return make_engine(BURNER, base=TOY_BASELINE)


@pytest.mark.parametrize("where", ["jail, SIGSTOP (as under the agent)", "no jail, default freezer"])
def test_the_idle_burner_scores_like_the_starter_or_fails(tmp_path, make_engine, monkeypatch, where):
    if where.startswith("jail"):
        if JAIL_PROBLEM:
            pytest.skip(f"SKIPPED LOUDLY: {JAIL_PROBLEM}")
        monkeypatch.setenv("DRYFT_JAIL", "1")
        monkeypatch.setenv("DRYFT_JAIL_UID", "61100")
        monkeypatch.setenv("DRYFT_FREEZER", "signal")
    run = run_harness(official(), burner(make_engine), tmp_path, timeout=300)
    res = run.result
    logs = [e["message"] for e in run.of("log")]
    assert sum(m.startswith("freezer: ") for m in logs) == 1, logs
    if res["status"] == "failed":
        assert res["failureCode"] == "candidate_error", res
        assert "while it was idle" in res["message"], res
    else:
        assert honest(res), res


def test_without_a_working_stop_the_accounting_catches_the_burner(tmp_path, make_engine, monkeypatch):
    # a freezer whose freeze stops nothing: the burners run "while frozen"
    monkeypatch.setattr(freezer.Family, "freeze", lambda self, timeout=1.0: self.members())
    events = in_process(official(), burner(make_engine), tmp_path, monkeypatch)
    res = events[-1]
    assert res["type"] == "result" and res["failureCode"] == "candidate_error", res
    assert "The candidate engine used" in res["message"] and "while it was idle" in res["message"], res
    # found while the baseline's first warm-up was timed: the candidate's fault, not the evaluator's
    assert not any(e["type"] == "sample" and not e["warmup"] for e in events)


def test_without_a_working_stop_the_honest_starter_still_passes(tmp_path, monkeypatch):
    # the accounting has no false positive: an honest engine waiting for its next command does no work
    monkeypatch.setattr(freezer.Family, "freeze", lambda self, timeout=1.0: self.members())
    events = in_process(official(), TOY_BASELINE, tmp_path, monkeypatch)
    res = events[-1]
    assert res["status"] == "succeeded", res

