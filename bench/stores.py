"""maka_es set-up shared by the workloads: an application on a SQLite file, one echo tool, a run
that declares the T1 protocol, and tool-call events on that run.

Everything goes through the public API (``RuntimeApplication``, ``maka_es.testing.builders``), the
way a host would drive it, so a figure measures what a host would pay.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from maka_es import RuntimeApplication
from maka_es.testing.builders import Events, Spine, run_header
from maka_es.tooljournal.runtime import Tool, ToolContext

SESSION = "s1"


class EchoArgs(BaseModel):
    text: str


def echo(args: EchoArgs, context: ToolContext) -> dict[str, Any]:
    """The tool under test does nothing, so the figure is the journal's own cost."""
    return {"kind": "text", "text": args.text}


ECHO = Tool("Echo", EchoArgs, echo, recovery_mode="never_auto_retry")


def open_app(path: Path, **kwargs: Any) -> RuntimeApplication:
    """The application on ``path`` (SQLite, WAL, ``synchronous=FULL``) with the echo tool."""
    return RuntimeApplication.open_sqlite(str(path), tools=[ECHO], **kwargs)


def spine(run_id: str, session: str = SESSION) -> Spine:
    return Spine(session_id=session, invocation_id=f"inv-{run_id}", run_id=run_id, turn_id="t1")


def start_run(app: RuntimeApplication, run_id: str, *, marker: bool = True) -> Spine:
    """A fresh run whose first event declares the T1 protocol (``marker``)."""
    if SESSION not in app.list_sessions():
        app.open_session(SESSION, "/workspace")
    run = spine(run_id)
    app.ledger.create_run(run_header(run))
    app.ledger.append_event(
        run_id, Events.wire(run, ts=1000).user("go", event_id="u-1", marker=marker)
    )
    return run


def tool_call(run: Spine, n: int) -> dict[str, Any]:
    """The model's n-th function_call on ``run`` (what T1 commits with its dispatch)."""
    return Events.wire(run, ts=1000 + n).call(f"c{n}", "Echo", {"text": f"step {n}"})


def tool_steps(app: RuntimeApplication, run: Spine, first: int, count: int) -> None:
    """``count`` tool steps (T1 -> tool -> T2) on ``run``, numbered from ``first``."""
    runtime = app.tool_runtime
    for n in range(first, first + count):
        runtime.execute(run.run_id, tool_call(run, n))


def pragmas(path: Path) -> dict[str, str]:
    """journal_mode and synchronous as an application connection sees them."""
    app = open_app(path)
    try:
        datastore = app._es.recorder.datastore  # type: ignore[attr-defined]
        with datastore.transaction(commit=False) as cursor:
            cursor.execute("PRAGMA journal_mode")
            journal = str(cursor.fetchone()[0])
            cursor.execute("PRAGMA synchronous")
            level = int(cursor.fetchone()[0])
    finally:
        app.close()
    names = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
    return {"journal_mode": journal, "synchronous": names.get(level, str(level))}


def rows_after(path: Path, notification_id: int) -> list[tuple[str, int, str, bytes]]:
    """The stored rows written after ``notification_id``: what the raw floor writes again."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT originator_id, originator_version, topic, state FROM stored_events "
            "WHERE rowid > ? ORDER BY rowid",
            (notification_id,),
        ).fetchall()
    return [(str(a), int(b), str(c), bytes(d)) for a, b, c, d in rows]


def max_rowid(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM stored_events").fetchone()[0])
