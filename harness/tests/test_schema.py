"""The generated JSON Schema (harness/harness/events.schema.json) and the stdlib validator over it."""
from __future__ import annotations

import pytest

from harness import events
from harness.schema import FAILURE_CODES, SCHEMA, validate

RESULT = {
    "type": "result", "status": "failed", "failureCode": "incorrect_output", "message": "m", "score": None,
    "workloads": [{"workload": "w", "samples": 2, "tps": 1.0, "ttftMs": None, "tpotMs": 0.5, "totalMs": 3,
                   "spreadPct": 0, "speedup": 1.2, "ratioSpreadPct": None}],
    "metrics": {"x": -1.5},
    "interval": {"low": 1, "high": 2, "halfWidth": 0.5, "level": 0.95},
}


def test_failure_codes_come_from_the_schema():
    assert FAILURE_CODES == tuple(SCHEMA["$defs"]["FailureCode"]["enum"])
    assert events.FAILURE_CODES is FAILURE_CODES
    assert "incorrect_output" in FAILURE_CODES and "harness_error" in FAILURE_CODES


@pytest.mark.parametrize("event", [
    {"type": "log", "level": "warn", "message": "hi"},
    {"type": "sample", "workload": "w", "index": 0, "warmup": False, "ttftMs": 1.0, "tpotMs": None, "tps": None,
     "totalMs": 2.0, "tokens": 8, "batchSize": 2, "peakMemoryBytes": None},
    {"type": "metric", "name": "loss", "step": 3, "value": -0.5, "elapsedMs": 10},
    {"type": "check", "name": "output", "passed": True, "detail": "ok"},
    {"type": "baseline", "hardware": "cpu", "paired": True, "workloads": {"w": {"totalMs": 5, "ttftMs": 0, "tpotMs": 1}}},
    {"type": "child", "role": "candidate", "state": "started"},
    RESULT,
])
def test_accepts_every_event_shape(event):
    assert validate(event) == []


@pytest.mark.parametrize("event, says", [
    ({"type": "log", "level": "debug", "message": "hi"}, "is not one of"),
    ({"type": "log", "level": "info", "message": "hi", "extra": 1}, "unexpected key 'extra'"),
    ({"type": "check", "name": "output", "passed": "yes", "detail": ""}, "expected boolean"),
    ({"type": "metric", "name": "loss", "step": -1, "value": 0, "elapsedMs": 0}, "below 0"),
    ({"type": "sample", "workload": "w", "index": 0, "warmup": False, "ttftMs": None, "tpotMs": None, "tps": None,
      "totalMs": 1.0, "tokens": 1, "batchSize": 0}, "not above 0"),
    ({**RESULT, "failureCode": "slow"}, "'slow' is not one of"),
    ({k: v for k, v in RESULT.items() if k != "message"}, "missing 'message'"),
    ({**RESULT, "interval": {"low": 1, "high": 2, "halfWidth": 0.5, "level": 2}}, "above 1"),
    ({**RESULT, "metrics": {"x": "1"}}, "expected number"),
    ({"type": "baseline", "hardware": "cpu", "workloads": {"w": {"totalMs": 0, "ttftMs": 0, "tpotMs": 0}}}, "not above 0"),
    ({"type": "telemetry"}, "matches 0 of the 7 shapes"),
])
def test_refuses_what_zod_refuses(event, says):
    errors = validate(event)
    assert errors and any(says in e for e in errors), errors


def test_the_writer_refuses_a_failure_code_the_schema_does_not_name(tmp_path):
    import os
    r, w = os.pipe()
    writer = events.EventWriter(w)
    try:
        with pytest.raises(ValueError):
            writer.result("failed", "m", failure_code="slow")
    finally:
        writer._file.close()
        os.close(r)
