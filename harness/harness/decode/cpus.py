"""The CPUs a slot's engines run on (`DRYFT_ENGINE_CPUS`, from the agent's `slots[].cpus`).

The harness pins itself before it starts any engine child; the children inherit the set, so the
baseline and the candidate of an official run share one CPU set and where the scheduler happened to
place each child is no difference between them."""
from __future__ import annotations

import os

ENGINE_CPUS_ENV = "DRYFT_ENGINE_CPUS"


def parse_cpu_list(text: str) -> set[int]:
    """'4-7,9' -> {4, 5, 6, 7, 9}, as `taskset -c` reads it."""
    cpus: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"{part!r} is not a CPU number or range")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ValueError(f"the range {part!r} runs backwards")
        cpus.update(range(first, last + 1))
    return cpus


def pin_from_env() -> str | None:
    """Pins this process (and so every engine child it starts) to `DRYFT_ENGINE_CPUS`; returns the
    list as given, or None when unset. Raises ValueError or OSError with the reason."""
    text = os.environ.get(ENGINE_CPUS_ENV, "").strip()
    if not text:
        return None
    cpus = parse_cpu_list(text)
    have = os.cpu_count() or 1
    missing = sorted(c for c in cpus if c >= have)
    if missing:
        # the kernel would quietly drop them and pin to the rest
        raise ValueError(f"this machine has CPUs 0-{have - 1}, not {', '.join(map(str, missing[:5]))}")
    os.sched_setaffinity(0, cpus)
    return text
