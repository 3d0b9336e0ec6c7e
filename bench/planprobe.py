"""One pass of parse + plan over a JSONL corpus in a fresh process: the 1M-event size.

Why a child process: a million parsed events take gigabytes; a child gives them back when it
ends (the bench process would keep its arenas), and its peak resident memory (``ru_maxrss``)
is the pass's own, with nothing the bench loaded before (docs/adr/0027-benchmark-method.md).
"""

from __future__ import annotations

import gc
import resource
import time
from pathlib import Path

from maka_es import RuntimeEvent, build_resume_plan


def one_pass(path: Path) -> tuple[float, float, int]:
    """(parse seconds, plan seconds, peak resident bytes) for the corpus at ``path``."""
    lines = path.read_text().splitlines()
    gc.collect()
    start = time.perf_counter()
    events = [RuntimeEvent.model_validate_json(line) for line in lines]
    parsed = time.perf_counter()
    build_resume_plan(events)
    planned = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return parsed - start, planned - parsed, peak
