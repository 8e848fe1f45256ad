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

FAILURE_CODES = {"incorrect_output", "candidate_error", "timeout", "latency_limit", "memory_limit",
                 "unstable_timing", "infra_error", "harness_error", "rule_violation"}


def _num(v, nullable=False, nonneg=True):
    if v is None:
        return nullable
    return isinstance(v, (int, float)) and not isinstance(v, bool) and (not nonneg or v >= 0)


def check_event(e: dict) -> None:
    """A Python mirror of libs/src/harness/events.ts (HarnessEvent): every line must parse."""
    t = e.get("type")
    if t == "log":
        assert e["level"] in ("info", "warn", "error") and isinstance(e["message"], str) and set(e) == {"type", "level", "message"}
    elif t == "sample":
        assert isinstance(e["workload"], str) and isinstance(e["index"], int) and e["index"] >= 0 and isinstance(e["warmup"], bool)
        for k in ("ttftMs", "tpotMs", "tps"):
            assert _num(e[k], nullable=True), (k, e)
        assert _num(e["totalMs"]) and isinstance(e["tokens"], int)
        assert isinstance(e.get("batchSize", 1), int) and e.get("batchSize", 1) > 0
        assert _num(e.get("peakMemoryBytes"), nullable=True)
    elif t == "check":
        assert isinstance(e["name"], str) and isinstance(e["passed"], bool) and isinstance(e["detail"], str)
    elif t == "baseline":
        assert isinstance(e["hardware"], str)
        assert isinstance(e.get("paired", False), bool) and isinstance(e.get("samples", 1), int)
        for fig in e["workloads"].values():
            assert _num(fig["totalMs"]) and fig["totalMs"] > 0 and _num(fig["ttftMs"]) and _num(fig["tpotMs"])
    elif t == "result":
        assert e["status"] in ("succeeded", "failed")
        assert e["failureCode"] is None or e["failureCode"] in FAILURE_CODES
        assert (e["status"] == "succeeded") == (e["failureCode"] is None)
        assert isinstance(e["message"], str) and _num(e["score"], nullable=True, nonneg=False)
        for w in e["workloads"]:
            assert set(w) == {"workload", "samples", "tps", "ttftMs", "tpotMs", "totalMs", "spreadPct", "speedup", "ratioSpreadPct"}
        if "interval" in e:
            iv = e["interval"]
            assert set(iv) == {"low", "high", "halfWidth", "level"} and iv["low"] <= iv["high"] and iv["level"] == 0.95
        assert isinstance(e.get("pairs", 1), int) and isinstance(e.get("indicative", False), bool)
        assert all(_num(v, nonneg=False) for v in e["metrics"].values())
        assert isinstance(e.get("detail", ""), str)
    elif t == "metric":
        pass
    elif t == "child":  # for the agent only (HarnessChildEvent)
        assert e["role"] in ("baseline", "candidate", "training") and e["state"] in ("started", "stopped") and len(e) == 3
    else:
        raise AssertionError(f"unknown event {e}")


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
