"""Inspect: ``sessions``, ``runs``, ``show RUN``, ``ops RUN`` (docs/cli.md#inspect).

Why read-only opens: looking at a stuck run must never change it; SQLite's ``mode=ro`` makes
that a property of the connection.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from maka_es.cli.output import console, emit_json
from maka_es.cli.root import JsonFlag, app, settings
from maka_es.cli.store import open_store
from maka_es.cli.views import ledger_rows, operation_rows, run_row, session_row


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(table)


@app.command()
def sessions(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """List the sessions in the store."""
    with open_store(settings(ctx).store, read_only=True) as runtime:
        rows = [session_row(runtime.get_session(s)) for s in runtime.list_sessions()]
    if as_json:
        emit_json(rows)
        return
    _table(
        "sessions",
        ["session", "cwd", "runs"],
        [[r["sessionId"], r["cwd"], len(r["runIds"])] for r in rows],
    )


@app.command()
def runs(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(help="Only this session's runs.")] = None,
    status: Annotated[
        list[str] | None, typer.Option("--status", help="Only runs with this status (repeat).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """List runs (of one session), optionally filtered by status."""
    with open_store(settings(ctx).store, read_only=True) as runtime:
        headers = runtime.list_runs(session) if session else runtime.ledger.list_all_runs()
    wanted = set(status or ())
    rows = [run_row(h) for h in headers if not wanted or h.status in wanted]
    if as_json:
        emit_json(rows)
        return
    _table(
        "runs",
        ["run", "session", "status", "resumed from"],
        [[r["runId"], r["sessionId"], r["status"], r.get("resumedFromRunId")] for r in rows],
    )


@app.command()
def show(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    as_json: JsonFlag = False,
) -> None:
    """The run's ledger: seq, lane, role, tool, operation state and decision."""
    with open_store(settings(ctx).store, read_only=True) as runtime:
        header = run_row(runtime.get_run_header(run))
        rows = ledger_rows(runtime, run)
    if as_json:
        emit_json({"header": header, "events": rows})
        return
    columns = ["seq", "eventId", "lane", "role", "tool", "operationState", "decision"]
    _table(
        f"run {run} ({header['status']})",
        ["seq", "event", "lane", "role", "tool", "operation state", "decision"],
        [[r[c] for c in columns] for r in rows],
    )


@app.command()
def ops(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    as_json: JsonFlag = False,
) -> None:
    """The run's tool operations: journal state, recovery mode, resolver decision."""
    with open_store(settings(ctx).store, read_only=True) as runtime:
        rows = operation_rows(runtime, run)
    if as_json:
        emit_json(rows)
        return
    _table(
        f"tool operations of {run}",
        ["operation", "tool", "recovery mode", "journal state", "decision"],
        [
            [
                r["operationId"],
                r["toolName"],
                r["recoveryMode"],
                r["journalState"],
                None
                if r["decision"] is None
                else f"{r['decision']['status']}/{r['decision']['reason']}",
            ]
            for r in rows
        ],
    )
