"""Files the starters carry a copy of (a submission cannot import the harness) stay identical to the harness's own."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

COPIES = [
    # The fast Qwen example reads safetensors without the package, exactly as the harness does.
    ("harness/harness/decode/models/safetensors_io.py", "starters/qwen3-4b-decode/examples/fast/st_io.py"),
]


def test_the_starters_copies_are_identical_to_the_harness():
    for original, copy in COPIES:
        a, b = (REPO / original).read_bytes(), (REPO / copy).read_bytes()
        assert a == b, f"{copy} differs from {original}: copy the harness's file over it"
