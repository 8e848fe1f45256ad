"""deep-recurrence training harness, on CPU with torch 1.13: the sample learns, cheats fail.

Every case goes through the real entry point (`python -m harness run ... --events-fd N`) and the
events are parsed and checked against the shapes of libs/src/harness/events.ts. Deadlines are
scaled down with timeScale. The cheat runs go in parallel (they are short and mostly fail before
training); the happy path runs alone so its clock is not shared.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from conftest import check_event as conftest_check_event

import pytest

# The training evaluator needs torch (Debian's python3-torch on CPU); without it these tests skip.
pytest.importorskip("torch")

HARNESS = Path(__file__).resolve().parents[1]
REPO = HARNESS.parent


def torch_cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()
CORPUS = Path(__file__).resolve().parent / "training_corpus"
SAMPLE = REPO / "starters" / "deep-recurrence" / "submission.py"


def base_spec(**over):
    spec = {
        "kind": "training",
        "benchmark": "deep-recurrence",
        "mode": "public",
        "rulesVersion": 1,
        "tier": "easy",
        "dataset": "square",
        "trainingSeconds": 60,
        "evalSeconds": 60,
        "timeScale": 0.05,
        "maxModelStateElements": 500_000_000,
        "device": "cpu",
        "gradClipNorm": 1.0,
        "task": {
            "modulus": 13,
            "recurrences": [{"kind": "square_mod", "params": {}, "weight": 1}],
            "sequenceLength": 10,
            "contextLength": {"min": 1, "max": 3},
            "minLength": 6,
            "trainSeed": 1,
            "evalSeed": 987654321,
            "evalExamples": 400,
        },
    }
    spec.update(over)
    return spec


def check_event(ev: dict) -> None:
    """The shapes of libs/src/harness/events.ts (the generated JSON Schema), plus a training run's own rule."""
    conftest_check_event(ev)
    if ev["type"] == "child":
        assert ev["role"] == "training", ev


def run_harness(tmp: Path, source: str, spec: dict, extra_files=(), env_extra=None, timeout=120):
    sub = tmp / "submission"
    sub.mkdir(parents=True)
    (sub / "submission.py").write_text(source, encoding="utf-8")
    for name in extra_files:
        (sub / name).write_text('{"w": [0.5, -0.25]}', encoding="utf-8")
    spec_path = tmp / "spec.json"
    spec_path.write_text(json.dumps(spec))
    events_path = tmp / "events.jsonl"
    env = dict(os.environ, PYTHONPATH=str(HARNESS))
    env.update(env_extra or {})
    with open(events_path, "w") as ev_out:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "harness", "run", "--benchmark", spec["benchmark"], "--submission", str(sub),
             "--mode", spec["mode"], "--spec", str(spec_path), "--events-fd", str(ev_out.fileno()), "--consume-spec"],
            cwd=str(REPO), env=env, pass_fds=(ev_out.fileno(),), capture_output=True, text=True, timeout=timeout,
        )
        wall = time.monotonic() - started
    events = [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()]
    for ev in events:
        check_event(ev)
    assert events and events[-1]["type"] == "result", proc.stderr[-3000:]
    assert sum(1 for e in events if e["type"] == "result") == 1
    return events, proc, wall


def corpus_case(name: str):
    text = (CORPUS / name).read_text()
    expect = re.search(r"^# expect: (\S+)(?: (.*))?$", text, re.M)
    extra = re.findall(r"^# extra-file: (\S+)$", text, re.M)
    over = re.search(r"^# spec: (.*)$", text, re.M)
    source = (CORPUS / "base.py").read_text() + "\n\n" + text
    return source, expect.group(1), (expect.group(2) or "").strip(), extra, json.loads(over.group(1)) if over else {}


CASES = sorted(p.name for p in CORPUS.glob("*.py") if p.name != "base.py")


@pytest.fixture(scope="module")
def corpus_runs(tmp_path_factory):
    """Run the whole corpus once, a few at a time, each child on one thread."""
    root = tmp_path_factory.mktemp("training_corpus")

    def one(name):
        source, status, needle, extra, over = corpus_case(name)
        spec = base_spec(**dict({"timeScale": 0.03}, **over))  # 1.8 s of training, 1 s grace
        return name, run_harness(root / name[:-3], source, spec, extra, env_extra={"OMP_NUM_THREADS": "1"})

    # The runs that wait on a clock (training to its end, a deadline) start first; most others fail
    # within a second of their child's start.
    slow_first = sorted(CASES, key=lambda n: 0 if re.search(r"ok_|spy_|sleep|slow|frozen", n) else 1)
    with ThreadPoolExecutor(max_workers=6) as pool:
        return dict(pool.map(one, slow_first))


@pytest.mark.parametrize("name", CASES)
def test_training_corpus(corpus_runs, name):
    _, status, needle, _, _ = corpus_case(name)
    events, proc, wall = corpus_runs[name]
    result = events[-1]
    if status == "succeeded":
        assert result["status"] == "succeeded", (result, proc.stderr[-3000:])
        assert result["score"] > result["metrics"]["chanceAccuracy"]
    else:
        assert result["status"] == "failed", result
        assert result["failureCode"] == status, (result, proc.stderr[-3000:])
        assert needle.lower() in result["message"].lower(), result["message"]
        assert result["score"] is None
    if name == "spy_eval_seed.py":
        assert "no eval seed in the child" in proc.stdout and "LEAK" not in proc.stdout
    if name == "cheat_sleep.py":
        # killed at allowance (1.8 s) + grace (1 s), not after the 600 s sleep
        assert wall < 30
    if name == "error_exception.py":
        assert "Traceback" in result["detail"] and "1 / 0" in result["detail"]


def test_training_sample_learns_through_entry_point(tmp_path):
    spec = base_spec(timeScale=0.08)  # 4.8 s of training on the CPU
    events, proc, wall = run_harness(tmp_path, SAMPLE.read_text(), spec)
    result = events[-1]
    assert result["status"] == "succeeded", (result, proc.stderr[-3000:])
    m = result["metrics"]
    chance = 100.0 / 13
    assert result["score"] == m["accuracy"] and m["accuracy"] > 2 * chance, m
    for key in ("steps", "updates", "tokensSeen", "examplesSeen", "trainingSeconds", "evalSeconds"):
        assert key in m
    assert m["updates"] >= 5 and m["tokensSeen"] == m["steps"] * 64 * 10
    assert m["trainingSeconds"] <= 4.8 + 1.0
    metrics = [e for e in events if e["type"] == "metric"]
    assert len(metrics) >= 3 and all(e["name"] == "loss" for e in metrics)
    gaps = [b["elapsedMs"] - a["elapsedMs"] for a, b in zip(metrics, metrics[1:])]
    assert min(gaps) >= 0.5 * 240 - 1  # rate-limited: at most one point per ~budget/20
    samples = [e for e in events if e["type"] == "sample"]
    assert len(samples) == 1 and samples[0]["metrics"]["accuracy"] == m["accuracy"]
    checks = {e["name"]: e["passed"] for e in events if e["type"] == "check"}
    assert checks.get("optimizer_coverage") and checks.get("weights_trained") and checks.get("deadline")


def test_training_spec_refused_clearly(tmp_path):
    spec = base_spec()
    spec["task"]["recurrences"] = [{"kind": "cubic_nonsense", "params": {}}]
    events, _, _ = run_harness(tmp_path, SAMPLE.read_text(), spec)
    assert events[-1]["failureCode"] == "harness_error" and "recurrences[0].kind" in events[-1]["message"]


@pytest.mark.skipif(torch_cuda_available(), reason="needs a machine where CUDA cannot start")
def test_training_process_that_fails_before_ready_says_why(tmp_path):
    """A training process that cannot start (here: device cuda where CUDA is unavailable, as a GPU box
    whose jail hides a device node would be) is the harness's failure, and its result says what the
    process reported instead of only "unexpected first message"."""
    events, proc, _ = run_harness(tmp_path, SAMPLE.read_text(), base_spec(device="cuda"))
    result = events[-1]
    assert result["status"] == "failed" and result["failureCode"] == "harness_error", result
    assert result["message"].startswith("the training process failed while starting: "), result["message"]
    assert "unexpected first message" not in result["message"]
    assert "cuda" in result["message"].lower(), result["message"]
    assert result["score"] is None


def test_training_tasks_follow_their_recurrences():
    sys.path.insert(0, str(HARNESS))
    from harness.training.spec import parse_training_spec
    from harness.training.tasks import eval_set

    spec = base_spec()
    spec["task"].update(
        modulus=101,
        sequenceLength=12,
        contextLength={"min": 2, "max": 4},
        minLength=8,
        recurrences=[
            {"kind": "square_mod", "params": {}},
            {"kind": "affine_mod", "params": {"random": 1}},
            {"kind": "fibonacci_mod", "params": {"a": 1, "b": 1}},
        ],
    )
    parsed = parse_training_spec(spec)
    inputs, labels, valid = eval_set(parsed.task, 5, 300)
    mask, pad = parsed.task.mask_token_id, parsed.task.pad_token_id
    kinds = {"square": 0, "fib": 0}
    for row_in, row_lab in zip(inputs.tolist(), labels.tolist()):
        seq = [x if x < mask else y for x, y in zip(row_in, row_lab) if x != pad]
        assert all(0 <= v < 101 for v in seq)
        if all(seq[i + 1] == seq[i] * seq[i] % 101 for i in range(len(seq) - 1)):
            kinds["square"] += 1
        elif all(seq[i + 2] == (seq[i + 1] + seq[i]) % 101 for i in range(len(seq) - 2)):
            kinds["fib"] += 1
    assert kinds["square"] > 50 and kinds["fib"] > 50
    # same seed, same set; another seed, another set
    again, _, _ = eval_set(parsed.task, 5, 300)
    other, _, _ = eval_set(parsed.task, 6, 300)
    assert (again == inputs).all() and not (other == inputs).all()


CACHE_SPY = '''
import json as _json

def build_model(spec):
    seen = {}
    for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME"):
        path = os.environ.get(var)
        seen[var] = [path, sorted(os.listdir(path)) if path and os.path.isdir(path) else None]
    print("CACHES " + _json.dumps(seen), flush=True)
    return TinyModel(spec).to(spec.device)


SUBMISSION = Submission(build_model=build_model, build_optimizer=build_optimizer, batch_size=BATCH)
'''


def _cache_run(tmp: Path, shared: Path, jailed: bool) -> dict:
    env = {var: str(shared / var) for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "CUDA_CACHE_PATH", "XDG_CACHE_HOME")}
    env["OMP_NUM_THREADS"] = "1"
    if jailed:
        env.update(DRYFT_JAIL="1", DRYFT_JAIL_UID="61100")
    source = "import os\n" + (CORPUS / "base.py").read_text() + "\n\n" + CACHE_SPY
    events, proc, _ = run_harness(tmp, source, base_spec(timeScale=0.02), env_extra=env)
    assert events[-1]["status"] == "succeeded", (events[-1], proc.stderr[-3000:])
    line = next(l for l in proc.stdout.splitlines() if l.startswith("CACHES "))
    return json.loads(line[len("CACHES "):])


@pytest.mark.parametrize("jailed", [False, True], ids=["unjailed", "jailed"])
def test_every_training_run_compiles_from_an_empty_cache_of_its_own(tmp_path, jailed):
    """The allowance includes compilation, and a warm torch.compile cache halved the time to the first
    update on the H200 (GPU_RESULTS.md, "Compile caches"): every run gets empty cache folders of its
    own, whatever cache folders the agent's host names (a shared one would also let one team's
    compiled artifacts reach another's run)."""
    if jailed and (os.geteuid() != 0 or not os.path.exists("/usr/bin/bwrap")):
        if os.environ.get("CI") == "true":
            raise RuntimeError("CI must run the training child in the jail (root and bubblewrap)")
        pytest.skip("SKIPPED LOUDLY: the jail needs root and bubblewrap")
    shared = tmp_path / "host-cache"
    for var in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
        (shared / var).mkdir(parents=True)
        (shared / var / "another-teams-kernel.so").write_text("warm")
    first = _cache_run(tmp_path / "a", shared, jailed)
    second = _cache_run(tmp_path / "b", shared, jailed)
    for var, (path, listing) in first.items():
        assert path and not path.startswith(str(shared)), (var, path)
        assert not listing, (var, listing)  # empty (or not made yet) when the submission starts
        if jailed:
            assert path.startswith("/tmp/dryft-caches/"), (var, path)  # the jail's own fresh /tmp
        else:
            assert path != second[var][0]  # a folder per run ...
            assert not os.path.exists(path)  # ... removed with it


def test_loss_points_read_late_keep_the_time_they_were_made_and_none_is_dropped(monkeypatch):
    """A busy trusted parent can read two of the child's points at once (the 1800 s fault run on a
    loaded box lost one each time: 2 s gaps). Each point keeps the child's own time, bounded by the
    parent's clock and by the point before it; the rate guard counts points against the time that
    passed, so a burst of late points passes and a flood does not."""
    from harness.training import runner as training_runner

    class Spec:
        training_budget = 1800.0

    events = []

    class Events:
        def emit(self, e):
            events.append(e)

        def log(self, *a, **k):
            pass

    r = training_runner._Runner(Spec(), "/nonexistent", Events())
    assert r.metric_every == 1.0
    clock = {"now": 100.0}
    monkeypatch.setattr(training_runner.time, "monotonic", lambda: clock["now"])
    t0 = 100.0

    def point(step, child_elapsed):
        r.handle_progress({"type": "metric", "value": 1.0, "step": step, "elapsed": child_elapsed}, t0)

    clock["now"] = 100.0
    point(1, 0.0)
    clock["now"] = 103.1  # the parent was busy: three points made 1 s apart arrive together
    point(2, 1.0)
    point(3, 2.0)
    point(4, 3.0)
    assert [e["step"] for e in events] == [1, 2, 3, 4]
    assert [round(e["elapsedMs"]) for e in events] == [0, 1000, 2000, 3000]
    # A child's time is never believed past the parent's clock, nor before the point before it.
    clock["now"] = 104.0
    point(5, 99.0)
    assert round(events[-1]["elapsedMs"]) == 4000
    clock["now"] = 104.2
    point(6, 1.5)
    assert len(events) == 5  # too soon after the last point's time (half a cadence): dropped
    clock["now"] = 105.0
    point(7, "not a number")
    assert events[-1]["step"] == 7 and round(events[-1]["elapsedMs"]) == 5000
    # A flood: as many points as it likes, at most about one per cadence of elapsed time gets through.
    for step in range(8, 1000):
        clock["now"] = 105.0 + (step - 8) * 0.001
        point(step, 5.0 + (step - 8) * 0.6)
    assert len(events) <= 6 + 2
