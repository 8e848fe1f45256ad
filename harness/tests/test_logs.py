"""What teams read: the training run's log tells the story (progress at a steady cadence, the final
evaluation, the verdict), and tracebacks show paths relative to the submission, never the agent's."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from conftest import run_harness as run_decode, toy_spec
from harness.paths import HARNESS_ROOT, relative_to_submission


def test_relative_to_submission_hides_the_agent_folders():
    sub = "/srv/dryft/.data/agent-work/runs/0f0e-1234/workspace"
    tb = (
        'Traceback (most recent call last):\n'
        f'  File "{HARNESS_ROOT}/harness/decode/child.py", line 160, in main\n'
        f'  File "{sub}/engine.py", line 7, in generate\n'
        f'  File "{sub}/kernels/attn.py", line 3, in attend\n'
        f"FileNotFoundError: [Errno 2] No such file or directory: '{sub}'\n"
        '  File "/mnt/sandbox/.data/agent-work/runs/abc/workspace/engine.py", line 1\n'
        '  File "/other/.data/agent-work/cache/x.py", line 2\n'
        '  File "/usr/lib/python3/dist-packages/torch/nn/modules/module.py", line 1194, in _call_impl\n'
    )
    out = relative_to_submission(tb, sub)
    assert 'File "<harness>/harness/decode/child.py"' in out
    assert 'File "engine.py", line 7' in out and 'File "kernels/attn.py", line 3' in out
    assert "No such file or directory: '.'" in out
    assert 'File "engine.py", line 1' in out  # a workspace mapped elsewhere
    assert 'File "<agent-work>/cache/x.py"' in out
    assert "/usr/lib/python3/dist-packages/torch/nn/modules/module.py" in out  # not the agent's: kept
    assert ".data/agent-work" not in out.replace("<agent-work>", "") and "/srv/dryft" not in out
    assert relative_to_submission("", sub) == ""


def _workspace(tmp_path: Path) -> Path:
    """A submission folder laid out as the agent lays it out."""
    d = tmp_path / ".data" / "agent-work" / "runs" / "5b1c9e2e-0000-4000-8000-000000000001" / "workspace"
    d.mkdir(parents=True)
    return d


def test_decode_traceback_names_engine_py_not_the_agent_work_dir(tmp_path, make_engine):
    src = make_engine("""
        from base import Engine as Base
        class Engine(Base):
            def generate(self, input_ids, max_new_tokens):
                yield from super().generate(input_ids, 2)
                explode_on_purpose()
        def explode_on_purpose():
            raise RuntimeError("kv cache went sideways")
    """)
    d = _workspace(tmp_path)
    for f in src.iterdir():
        (d / f.name).write_bytes(f.read_bytes())
    res = run_decode(toy_spec("public"), d, tmp_path).result
    assert res["failureCode"] == "candidate_error"
    assert 'File "engine.py"' in res["detail"] and "explode_on_purpose" in res["detail"]
    assert str(tmp_path) not in res["detail"] and "agent-work" not in res["detail"]
    assert str(tmp_path) not in res["message"]


torch = pytest.importorskip("torch")
import test_training as training  # noqa: E402  (needs torch; its helpers run the real entry point)


def _training_run(tmp_path: Path, source: str, spec: dict):
    """training.run_harness, with the submission inside an agent-style work folder."""
    ws = _workspace(tmp_path)
    events, proc, wall = training.run_harness(ws.parent / "t", source, spec)
    return events, proc, ws.parent / "t" / "submission"


def test_training_logs_progress_the_final_evaluation_and_the_verdict(tmp_path):
    spec = training.base_spec(timeScale=0.08)  # 4.8 s of training on the CPU
    events, proc, _ = _training_run(tmp_path, training.SAMPLE.read_text(), spec)
    assert events[-1]["status"] == "succeeded", proc.stderr[-3000:]
    logs = [e["message"] for e in events if e["type"] == "log"]
    progress = [m for m in logs if m.startswith("training: step")]
    pattern = re.compile(
        r"^training: step ([\d,]+), loss (\d+\.\d{4}), ([\d,]+) tokens/s, (\d+\.\d)s of 4\.8s \((\d+\.\d)s left\)$"
    )
    assert len(progress) >= 3, logs
    parsed = [pattern.match(m) for m in progress]
    assert all(parsed), progress
    steps = [int(m.group(1).replace(",", "")) for m in parsed]
    elapsed = [float(m.group(4)) for m in parsed]
    assert steps == sorted(steps) and elapsed == sorted(elapsed)
    assert all(int(m.group(3).replace(",", "")) > 0 for m in parsed)
    assert all(abs(float(m.group(4)) + float(m.group(5)) - 4.8) < 0.15 or float(m.group(5)) == 0 for m in parsed)
    # a steady cadence: about a tenth of the allowance apart, never a flood. Each line prints its
    # elapsed time to 0.1 s, so lines 0.48 s apart may read 0.4 apart (0.96 s as 1.0, 1.44 s as 1.4).
    assert all(b - a >= 0.48 - 0.1 - 1e-9 for a, b in zip(elapsed, elapsed[1:]))
    assert len(progress) <= 12
    m = events[-1]["metrics"]
    assert any(re.match(rf"^training ended after \d+\.\ds: {m['updates']:,} updates, {m['steps']:,} steps, {m['tokensSeen']:,} tokens, final loss \d", x) for x in logs), logs
    assert "final evaluation: 400 hidden examples, budget 4.8s" in logs
    assert any(x.startswith(f"final evaluation: accuracy {m['accuracy']:.2f}% (") for x in logs), logs
    assert logs[-1] == f"verdict: succeeded, score {events[-1]['score']:.2f} (accuracy in percent)"
    # every check's verdict is a log line too
    checks = [e for e in events if e["type"] == "check"]
    assert {"deadline", "eval_budget"} <= {c["name"] for c in checks}
    for c in checks:
        assert f"check {c['name']}: {'pass' if c['passed'] else 'FAIL'}: {c['detail']}" in logs


def test_training_traceback_is_relative_to_the_submission(tmp_path):
    source, _, _, _, over = training.corpus_case("error_exception.py")
    spec = training.base_spec(**dict({"timeScale": 0.03}, **over))
    events, proc, sub = _training_run(tmp_path, source, spec)
    result = events[-1]
    assert result["failureCode"] == "candidate_error", result
    assert 'File "submission.py"' in result["detail"] and "1 / 0" in result["detail"]
    for text in (result["detail"], result["message"]):
        assert str(tmp_path) not in text and "agent-work" not in text and HARNESS_ROOT not in text
    logs = [e for e in events if e["type"] == "log"]
    assert logs[-2]["level"] == "error" and 'File "submission.py"' in logs[-2]["message"]
    assert logs[-1]["message"].startswith("verdict: failed (candidate_error): ")
    assert str(tmp_path) not in "\n".join(e["message"] for e in logs)
