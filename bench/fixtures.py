"""Ledgers of any size, built once per bench run with the public builders.

Why builders and ``import_run``: a run of 100k events written one tool step at a time would
spend minutes in fsyncs before the first figure. ``import_run`` takes a whole run in ONE
save through the same gates as live writes, so the stored facts are the ones a host's steps
would have left. The event JSON for the plan-scaling workload is cached on disk under
``build/bench-cache/<maka_es version>/`` (it depends only on the builders).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import maka_es
from bench.stores import SESSION, spine, tool_call
from maka_es import RuntimeApplication
from maka_es.builders import LedgerBuilder, run_header
from maka_es.builders import Spine as SpineT

Wire = dict[str, Any]


def ledger(run: SpineT, size: int, *, journaled: bool, terminal: bool = False) -> list[Wire]:
    """``size`` events: a user message declaring T1, then tool steps (model text, call,
    response), then notes up to ``size``; ``terminal`` ends the run. ``journaled`` steps carry
    T1 (call + dispatch) and a bound T2; the others are unbound calls and responses, the only
    tool facts a whole-run import may carry (T1 and T2 facts have their own commands)."""
    b = LedgerBuilder(spine=run)
    b.user("go", marker=True)
    tail, width = (1 if terminal else 0), (4 if journaled else 3)
    n = 0
    while len(b.events) + width + tail <= size:
        n += 1
        args, result = {"text": f"step {n}"}, {"kind": "text", "text": f"step {n}"}
        b.model_text(f"step {n}")
        if journaled:
            b.t1_call(f"c{n}", "Echo", args)
            b.bound_response(f"c{n}", "Echo", result)
        else:
            b.call(f"c{n}", "Echo", args)
            b.response(f"c{n}", "Echo", result)
    while len(b.events) + tail < size:
        b.model_text(f"note {len(b.events)}")
    if terminal:
        b.terminal("completed")
    return b.events


def import_run(
    app: RuntimeApplication,
    run_id: str,
    size: int,
    *,
    interrupted: bool = False,
    terminal: bool = False,
) -> None:
    """One run of ``size`` events: imported in one save, then, when ``interrupted``, a T1
    with no T2 (its call and dispatch are the last two events)."""
    if SESSION not in app.list_sessions():
        app.open_session(SESSION, "/workspace")
    run = spine(run_id)
    overrides: dict[str, Any] = {}
    if terminal:
        overrides = {"status": "completed", "completedAt": 2000, "updatedAt": 2000}
    events = ledger(run, size - 2 if interrupted else size, journaled=False, terminal=terminal)
    app.import_run(run_header(run, **overrides), events)
    if interrupted:
        app.commit_tool_prepared(run_id, tool_call(run, size), recovery_mode="never_auto_retry")


def ledger_lines(cache: Path, size: int) -> list[str]:
    """``size`` events of one run as JSON lines, cached by maka_es version."""
    path = cache / maka_es.__version__ / f"ledger-{size}.jsonl"
    if path.exists():
        return path.read_text().splitlines()
    lines = [
        json.dumps(e, separators=(",", ":")) for e in ledger(spine("scale"), size, journaled=True)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines))
    tmp.replace(path)
    return lines
