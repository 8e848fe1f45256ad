"""`python -m harness run --benchmark ID --submission DIR --mode public|official --spec FILE --events-fd N`"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

from .events import EventWriter
from . import jail
from .jail import make_parent_undumpable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="evaluate one submission")
    run.add_argument("--benchmark", required=True)
    run.add_argument("--submission", required=True, help="directory holding the unpacked submission")
    run.add_argument("--mode", choices=["public", "official", "baseline", "calibration"], required=True, help="baseline: time the trusted baseline engine alone (an organizer's re-measure); calibration: pairs of the baseline and the reference engine (K); neither reads the submission directory")
    run.add_argument("--spec", required=True, help="JSON spec written by the agent from the benchmark definition")
    run.add_argument("--events-fd", type=int, required=True, help="file descriptor for JSON-line events")
    run.add_argument(
        "--consume-spec",
        action="store_true",
        help="delete the spec file once read, before any submission code starts (the agent passes this)",
    )
    args = parser.parse_args(argv)
    # No ptrace, /proc/<pid>/mem or process_vm_* on the parent, even by a process of its own uid.
    make_parent_undumpable()

    events = EventWriter(args.events_fd)
    # The agent learns when the candidate's child runs (see jail.notify); nothing after the verdict.
    jail.observer = lambda role, state: None if events.result_sent else events.emit({"type": "child", "role": role, "state": state})
    try:
        try:
            with open(args.spec, encoding="utf-8") as fh:
                spec = json.load(fh)
        finally:
            # The spec holds what the submission must never see (hidden workload seeds, the hidden
            # evaluation seed). Untrusted code runs in the same sandbox as this process, and can
            # find the path in our command line, so the file is gone before it starts.
            if args.consume_spec:
                try:
                    os.unlink(args.spec)
                except FileNotFoundError:
                    pass
        if spec.get("benchmark") != args.benchmark or spec.get("mode") != args.mode:
            raise ValueError("spec does not match --benchmark/--mode")
        if spec.get("kind") == "decode":
            from .decode.runner import run as run_decode

            run_decode(spec, args.submission, events)
        elif spec.get("kind") == "training":
            from .training.runner import run as run_training

            run_training(spec, args.submission, events)
        else:
            raise ValueError(f"unknown benchmark kind {spec.get('kind')!r}")
    except Exception:  # the harness itself broke: never blame the submission for it
        tb = traceback.format_exc()
        events.log(tb, level="error")
        events.result("failed", "The evaluator failed; retry once and report it if it persists.", "harness_error", detail=tb)
    if not events.result_sent:
        events.result("failed", "The evaluator ended without a verdict.", "harness_error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
