"""Ledgers of any size, built once per bench run with the public builders.

Why builders and ``import_run``: a run of 100k events written one tool step at a time would
spend minutes in fsyncs before the first figure. ``import_run`` takes a whole run in ONE
save through the same gates as live writes, so the stored facts are the ones a host's steps
would have left. The event JSON for the plan-scaling workload is cached on disk under
``build/bench-cache/`` (bench/cache.py: keyed by the size and the code that writes it).
"""

from __future__ import annotations

import json
import multiprocessing
import shutil
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from bench.cache import cached
from bench.stores import SESSION, spine, tool_call
from maka_es import RuntimeApplication
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.builders import Spine as SpineT

Wire = dict[str, Any]
T = TypeVar("T")


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
        b.text(f"step {n}")
        if journaled:
            b.t1_call(f"c{n}", "Echo", args)
            b.bound_response(f"c{n}", "Echo", result)
        else:
            b.call(f"c{n}", "Echo", args)
            b.response(f"c{n}", "Echo", result)
    while len(b.events) + tail < size:
        b.text(f"note {len(b.events)}")
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
    session: str = SESSION,
) -> None:
    """One run of ``size`` events: imported in one save, then, when ``interrupted``, a T1
    with no T2 (its call and dispatch are the last two events).

    The import registers the run in ``session`` and opens the session if it is new; asking
    the store for its sessions first would scan every stored fact once per run."""
    run = spine(run_id, session)
    overrides: dict[str, Any] = {}
    if terminal:
        overrides = {"status": "completed", "completedAt": 2000, "updatedAt": 2000}
    events = ledger(run, size - 2 if interrupted else size, journaled=False, terminal=terminal)
    app.ledger.import_run(run_header(run, **overrides), events)
    if interrupted:
        app.tool_journal.commit_tool_prepared(
            run_id, tool_call(run, size), recovery_mode="never_auto_retry"
        )


LEDGER = "ledger.jsonl"


def write_ledger(folder: Path, size: int) -> None:
    """``size`` events of one journaled run, one JSON object a line, into ``folder``."""
    events = ledger(spine("scale"), size, journaled=True)
    with (folder / LEDGER).open("w") as out:
        for event in events:
            out.write(json.dumps(event, separators=(",", ":")) + "\n")


def ledger_path(cache: Path, size: int, *, child: bool = False) -> Path:
    """The cached JSONL corpus of ``size`` events (bench/cache.py), written if missing; in a
    child process when ``child`` (a 1M-event builder holds gigabytes the bench should not
    keep)."""

    def build(folder: Path) -> None:
        if child:
            in_child(write_ledger, folder, size)
        else:
            write_ledger(folder, size)

    folder, built_s = cached(cache, f"ledger-{size}", {"size": size}, build)
    if built_s is not None:
        print(f"fixture: {size:,}-event corpus written in {built_s:.1f} s", flush=True)
    return folder / LEDGER


def ledger_lines(cache: Path, size: int) -> list[str]:
    """``size`` events of one run as JSON lines (cached, keyed by the code that writes them)."""
    return ledger_path(cache, size).read_text().splitlines()


def in_child(func: Callable[..., T], *args: Any) -> T:
    """``func(*args)`` in a fresh interpreter (spawn): its memory is returned when it ends."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
        return pool.submit(func, *args).result()


SHORT_RUN = "short"
SHORT_EVENTS = 100
LIVE_RUN = "live"
IMPORTED_RUN = "imported"
LIVE_STORE = "live.sqlite"
IMPORTED_STORE = "imported.sqlite"


def live_steps(size: int) -> int:
    """Tool steps that write a live run of about ``size`` events (the user message, then
    three events per step: the call, its dispatch fact, the bound response)."""
    return max(1, (size - 1) // 3)


def write_history_stores(folder: Path, size: int, scratch: Path) -> None:
    """Two stores of one ``size``-event run each: ``live.sqlite`` (beside a short live run
    of ``SHORT_EVENTS``) written one tool step at a time through ``ToolRuntime.execute`` (the
    way hosts write: its snapshot lags wherever the library's cadence left it), and
    ``imported.sqlite`` written by one ``import_run`` (its snapshot covers every event).
    Built under ``scratch`` (tmpfs: no fsync wait), then moved."""
    from bench.stores import open_app, start_run, tool_steps

    scratch.mkdir(parents=True, exist_ok=True)
    for name in (LIVE_STORE, IMPORTED_STORE):
        for stale in scratch.glob(f"{name}*"):
            stale.unlink()
    app = open_app(scratch / LIVE_STORE)
    tool_steps(app, start_run(app, SHORT_RUN), 1, live_steps(SHORT_EVENTS))
    tool_steps(app, start_run(app, LIVE_RUN), 1, live_steps(size))
    app.close()
    app = open_app(scratch / IMPORTED_STORE)
    import_run(app, IMPORTED_RUN, size)
    app.close()
    for item in scratch.iterdir():
        if item.name.startswith((LIVE_STORE, IMPORTED_STORE)):
            shutil.move(str(item), folder / item.name)


def history_stores(cache: Path, size: int, scratch: Path) -> Path:
    """The cached folder holding both stores of ``size`` events (written if missing)."""
    folder, built_s = cached(
        cache, "history", {"size": size}, lambda into: write_history_stores(into, size, scratch)
    )
    if built_s is not None:
        print(f"fixture: live and imported {size:,}-event runs written in {built_s:.1f} s")
    return folder
