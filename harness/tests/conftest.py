"""Helpers: run the real harness (`python -m harness run ...`) as the agent does, on a pipe fd."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "harness"
TOY_MODEL = REPO / "models" / "toy" / "model.json"
TOY_BASELINE = REPO / "starters" / "toy-decode" / "engine"
TOY_FAST = REPO / "starters" / "toy-decode" / "examples" / "fast"
QWEN_FAST = REPO / "starters" / "qwen3-4b-decode" / "examples" / "fast"

from harness.schema import FAILURE_CODES, validate  # noqa: E402,F401 (the generated schema)


def check_event(e: dict) -> None:
    """Every line must be a HarnessEvent (or the agent-only child event) by the JSON Schema generated
    from libs/src/harness/events.ts, plus the rules a schema cannot say."""
    errors = validate(e)
    assert not errors, f"{e}: {'; '.join(errors)}"
    if e["type"] == "result":
        assert (e["status"] == "succeeded") == (e["failureCode"] is None), e
        for w in e["workloads"]:
            # The harness always writes every field of a workload summary (null when not measured).
            assert set(w) == {"workload", "samples", "tps", "ttftMs", "tpotMs", "totalMs", "spreadPct", "speedup", "ratioSpreadPct"}, w
        if "interval" in e:
            assert e["interval"]["low"] <= e["interval"]["high"] and e["interval"]["level"] == 0.95, e


class Run:
    def __init__(self, events, stdout, stderr, seconds):
        self.events, self.stdout, self.stderr, self.seconds = events, stdout, stderr, seconds

    @property
    def result(self) -> dict:
        return self.events[-1]

    def of(self, type_: str) -> list:
        return [e for e in self.events if e["type"] == type_]

    def check(self, name: str) -> dict:
        return next(e for e in self.events if e["type"] == "check" and e["name"] == name)


def toy_spec(mode="public", **over) -> dict:
    spec = {
        "kind": "decode", "benchmark": "toy-decode", "mode": mode, "rulesVersion": 1,
        "model": {"family": "toy", "path": str(TOY_MODEL)},
        "baselineEngine": str(TOY_BASELINE),
        "workloads": [{"name": "w", "batchSize": 2, "promptLength": 32, "maxNewTokens": 8, "seed": 7}],
        "samplesPerWorkload": 2, "warmupSamples": 0,
        "limits": {"loadSeconds": 20, "sampleSeconds": 10, "runSeconds": 60, "memoryBytes": None},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 50, "logitTolerance": 0},
        # A cached baseline keeps the cheating tests short; tests of the baseline path set None.
        "baseline": {"hardware": "test", "workloads": {"w": {"totalMs": 5.0, "ttftMs": 1.0, "tpotMs": 0.5}}},
    }
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(spec.get(key), dict):
            spec[key] = {**spec[key], **value}
        else:
            spec[key] = value
    return spec


def run_harness(spec: dict, submission, tmp_path: Path, timeout: float = 120, python: str = sys.executable, consume_spec: bool = False) -> Run:
    spec_path = tmp_path / f"spec-{time.monotonic_ns()}.json"
    spec_path.write_text(json.dumps(spec))
    r, w = os.pipe()
    env = dict(os.environ, PYTHONPATH=str(HARNESS))
    t = time.monotonic()
    proc = subprocess.Popen(
        [python, "-m", "harness", "run", "--benchmark", spec["benchmark"], "--submission", str(submission),
         "--mode", spec["mode"], "--spec", str(spec_path), "--events-fd", str(w)] + (["--consume-spec"] if consume_spec else []),
        cwd=str(REPO), pass_fds=(w,), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
    )
    os.close(w)
    with os.fdopen(r, "rb") as fh:
        raw = fh.read()
    out, err = proc.communicate(timeout=timeout)
    seconds = time.monotonic() - t
    assert proc.returncode == 0, err.decode()
    events = []
    for line in raw.decode().splitlines():
        e = json.loads(line)
        check_event(e)
        events.append(e)
    assert events and events[-1]["type"] == "result", raw.decode()
    assert sum(e["type"] == "result" for e in events) == 1
    return Run(events, out.decode(errors="replace"), err.decode(errors="replace"), seconds)


@pytest.fixture
def make_engine(tmp_path):
    """A submission folder holding the fast toy engine as base.py plus the given engine.py."""
    counter = [0]

    def make(code: str, base: Path = TOY_FAST) -> Path:
        counter[0] += 1
        d = tmp_path / f"engine{counter[0]}"
        d.mkdir()
        for f in base.iterdir():
            if f.is_file() and f.suffix == ".py":
                shutil.copy(f, d / ("base.py" if f.name == "engine.py" else f.name))
        (d / "engine.py").write_text(textwrap.dedent(code))
        return d

    return make
