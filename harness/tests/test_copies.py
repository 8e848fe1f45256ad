"""Files the starters carry a copy of (a submission cannot import the harness) stay identical to the harness's own."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

COPIES = [
    # The fast Qwen example reads safetensors without the package, exactly as the harness does.
    ("harness/harness/decode/models/safetensors_io.py", "starters/qwen3-4b-decode/examples/fast/st_io.py"),
    ("harness/harness/decode/models/safetensors_io.py", "harness/reference/qwen3/st_io.py"),
    # The fast examples a participant reads are the reference engines the harness times official runs
    # against (harness/reference/: the harness's own, never a participant's file): one code, two places.
    ("harness/reference/qwen3/engine.py", "starters/qwen3-4b-decode/examples/fast/engine.py"),
    ("harness/reference/toy/engine.py", "starters/toy-decode/examples/fast/engine.py"),
]


def test_the_starters_copies_are_identical_to_the_harness():
    for original, copy in COPIES:
        a, b = (REPO / original).read_bytes(), (REPO / copy).read_bytes()
        assert a == b, f"{copy} differs from {original}: copy the harness's file over it"
