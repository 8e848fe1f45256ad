"""The event channel: JSON lines on a file descriptor of the harness's own.

The shapes are defined once, as zod schemas, in `libs/src/harness/events.ts`; this module writes
exactly those shapes. Only the trusted parent holds this writer: the untrusted child never gets the
descriptor (it is not inherited), so nothing a submission prints or writes can become an event.
"""
from __future__ import annotations

import json
import math
import os
import threading
from typing import Any, Optional

from .schema import FAILURE_CODES  # noqa: F401 (from the generated schema; re-exported)


class RunFailure(Exception):
    """A failed run's verdict on its way to `EventWriter.result`: a failure code (FAILURE_CODES),
    the message shown to the team, and an optional detail (a traceback, the first bad position).
    Subclasses only say whose fault it is where a caller must tell them apart (engineproc's
    EngineFailure: the engine's; decode's HarnessFailure: the evaluator's)."""

    def __init__(self, code: str, message: str, detail: Optional[str] = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.detail = detail


def _clean(value: Any) -> Any:
    """JSON has no NaN/inf; the schema wants numbers or null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


class EventWriter:
    def __init__(self, fd: int) -> None:
        os.set_inheritable(fd, False)
        self._file = os.fdopen(fd, "w", buffering=1, encoding="utf-8", closefd=True)
        self._lock = threading.Lock()
        self.result_sent = False

    def emit(self, event: dict) -> None:
        line = json.dumps(_clean(event), separators=(",", ":"), allow_nan=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def log(self, message: str, level: str = "info") -> None:
        self.emit({"type": "log", "level": level, "message": message})

    def check(self, name: str, passed: bool, detail: str) -> None:
        self.emit({"type": "check", "name": name, "passed": bool(passed), "detail": detail})

    def result(
        self,
        status: str,
        message: str,
        failure_code: Optional[str] = None,
        score: Optional[float] = None,
        workloads: Optional[list] = None,
        metrics: Optional[dict] = None,
        detail: Optional[str] = None,
        interval: Optional[dict] = None,
        pairs: Optional[int] = None,
        indicative: Optional[bool] = None,
        baseline: Optional[dict] = None,
        scoring: Optional[dict] = None,
        absoluteInterval: Optional[dict] = None,  # noqa: N803 (the event's own field name)
        promptNonce: Optional[str] = None,  # noqa: N803
        calibration: Optional[dict] = None,
    ) -> None:
        if self.result_sent:
            return
        if failure_code is not None and failure_code not in FAILURE_CODES:
            raise ValueError(f"unknown failure code {failure_code}")
        event = {
            "type": "result",
            "status": status,
            "failureCode": failure_code,
            "message": message,
            "score": score,
            "workloads": workloads or [],
            "metrics": metrics or {},
        }
        if detail is not None:
            event["detail"] = detail
        # Decode: the score's 95 % interval and pairs per workload (official, paired), or
        # indicative = True for a public score (one unpaired sample against a cached baseline).
        if interval is not None:
            event["interval"] = interval
        if pairs is not None:
            event["pairs"] = pairs
        if indicative is not None:
            event["indicative"] = bool(indicative)
        # A baseline re-measure: {hardware, samples, workloads}, the medians the hub caches.
        if baseline is not None:
            event["baseline"] = baseline
        # Decode: what the score was measured against, the interval with K's folded in, the run's
        # prompt secret (organizers only; the hub strips it from the team's view), a calibration's pairs.
        if scoring is not None:
            event["scoring"] = scoring
        if absoluteInterval is not None:
            event["absoluteInterval"] = absoluteInterval
        if promptNonce is not None:
            event["promptNonce"] = promptNonce
        if calibration is not None:
            event["calibration"] = calibration
        self.emit(event)
        self.result_sent = True
