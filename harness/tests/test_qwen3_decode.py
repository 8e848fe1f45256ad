"""qwen3-4b-decode on CPU, with Debian's torch 1.13 and no Transformers/safetensors.

Covered here: the safetensors reader/writer, the trusted reference (loading a tiny random Qwen3
checkpoint written in HF layout, sharded), its tie-tolerant teacher-forced check, and full harness
runs where both baseline and candidate are the pure-torch example engine (eager on CPU, float32).
Not covered on CPU: the Transformers baseline engine (imports transformers; it is only compiled
here) and the CUDA-graph path of the example: both run on the GPU (see harness/GPU_RESULTS.md).
"""
import py_compile
import random
import sys

import pytest

torch = pytest.importorskip("torch")

from conftest import HARNESS, QWEN_FAST, REPO, run_harness  # noqa: E402

sys.path.insert(0, str(HARNESS))
from harness.decode.models import safetensors_io  # noqa: E402
from harness.decode.models.qwen3 import Qwen3Reference, save_tiny_qwen3  # noqa: E402


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tinyqwen3")
    save_tiny_qwen3(str(d), shards=2, seed=1)
    return d


def qwen_spec(model, mode="public", **over):
    spec = {
        "kind": "decode", "benchmark": "qwen3-4b-decode", "mode": mode, "rulesVersion": 1,
        "model": {"family": "qwen3", "path": str(model)},
        "baselineEngine": str(QWEN_FAST),
        "workloads": [{"name": "b2", "batchSize": 2, "promptLength": 16, "maxNewTokens": 12, "seed": 3}],
        "samplesPerWorkload": 2, "warmupSamples": 1,
        "limits": {"loadSeconds": 60, "sampleSeconds": 30, "runSeconds": 120, "memoryBytes": None},
        "checks": {"maxTtftMs": None, "maxTpotMs": None, "maxRatioSpreadPct": 100, "logitTolerance": 1e-3},
        "baseline": None,
    }
    spec.update(over)
    return spec


def test_safetensors_roundtrip(tmp_path):
    t = {"a": torch.randn(3, 4), "b": torch.randn(5).to(torch.bfloat16), "c": torch.arange(6, dtype=torch.int64).view(2, 3),
         "empty": torch.zeros(0, 2)}
    path = str(tmp_path / "x.safetensors")
    safetensors_io.save_file(t, path, metadata={"format": "pt"}, use_package=False)
    back = safetensors_io.load_file(path, use_package=False)
    assert set(back) == set(t)
    for k in t:
        assert back[k].dtype == t[k].dtype and torch.equal(back[k], t[k])
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    assert n % 8 == 0 and raw[8:9] == b"{"  # the standard layout other readers expect


def test_reference_loads_sharded_checkpoint_and_checks_ties(tiny):
    ref = Qwen3Reference(str(tiny))
    assert ref.vocab_size == 256 and ref.device == "cpu"
    rng = random.Random(5)
    prompt = [rng.randrange(256) for _ in range(10)]
    greedy = ref.greedy(prompt, 8)
    assert ref.verify([prompt], [greedy], 0.0) is None
    # Take the runner-up at step 3, continue greedily from that prefix: the tokens after the
    # divergence are judged on the candidate's own prefix, so only step 3's gap matters.
    h = ref.hidden_states(torch.tensor([prompt + greedy[:3]]))
    lg = ref.logits(h[:, -1])[0]
    top2 = lg.topk(2)
    gap = float(top2.values[0] - top2.values[1])
    alt = greedy[:3] + [int(top2.indices[1])]
    alt += ref.greedy(prompt + alt, 8 - len(alt))
    assert ref.verify([prompt], [alt], gap + 1e-4) is None
    bad = ref.verify([prompt], [alt], gap / 2)
    assert (bad["sequence"], bad["step"], bad["token"], bad["best"]) == (0, 3, alt[3], greedy[3])


def test_baseline_engine_compiles_and_pins_the_revision():
    path = REPO / "starters" / "qwen3-4b-decode" / "engine" / "engine.py"
    py_compile.compile(str(path), doraise=True)
    assert "cdbee75f17c01a7cc42f958dc650907174af0554" in path.read_text()


def test_example_engine_through_the_harness(tiny, tmp_path):
    run = run_harness(qwen_spec(tiny, "official"), QWEN_FAST, tmp_path)
    res = run.result
    assert res["status"] == "succeeded", res
    assert run.check("output")["passed"] and len(run.of("baseline")) == 1
    assert res["metrics"]["sequencesOffBaseline"] == 0
    assert res["score"] > 0  # the same engine twice: ~100, but CPU timing on a shared machine is too noisy to assert


def test_perturbed_logit_is_incorrect_output(tiny, tmp_path, make_engine):
    d = make_engine((HARNESS / "tests" / "engines" / "qwen3_perturbed.py").read_text(), base=QWEN_FAST)
    run = run_harness(qwen_spec(tiny), d, tmp_path)
    res = run.result
    assert res["failureCode"] == "incorrect_output", res
    assert "sequence 1, step 0" in res["message"]
