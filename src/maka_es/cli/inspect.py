"""The read commands: ``sessions``, ``runs``, ``show RUN``, ``ops RUN`` (docs/cli.md#inspect) and
``report`` (docs/cli.md#report).

Why read-only opens: looking at a stuck run must never change it; SQLite's ``mode=ro`` makes
that a property of the connection. Why ``report`` only delegates: ``maka_es.report`` reads the
store once and renders one self-contained page (ADR 0030); the command names the file it wrote.
It opens the store with the host context ``continue`` uses (the host inspector of
``--tool``/``--tools`` and the safe-boundary flag on), so the continuation decision on the page
is the one the host would get.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from maka_es.adapters.workspace import LocalHostInspector
from maka_es.cli.operator import host_tool_names, load_tools
from maka_es.cli.store import (
    JsonFlag,
    ToolNamesOption,
    ToolsFactoryOption,
    console,
    emit_json,
    ledger_rows,
    open_store,
    operation_rows,
    run_row,
    session_row,
    settings,
)
from maka_es.report import write_run_report, write_session_report


def _table(title: str, columns: list[str], rows: list[list[Any]]) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    console.print(table)


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


def report(
    ctx: typer.Context,
    run: Annotated[str | None, typer.Argument(help="The run to report.")] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="The HTML file to write.")] = Path(
        "report.html"
    ),
    session: Annotated[
        str | None, typer.Option("--session", help="Report every run of this session instead.")
    ] = None,
    tool: ToolNamesOption = None,
    tools: ToolsFactoryOption = None,
) -> None:
    """Write a self-contained HTML page: timeline, tool operations, plans, lineage."""
    if (run is None) == (session is None):
        raise typer.BadParameter("name a RUN, or --session SESSION (not both)")
    names = host_tool_names(tool, load_tools(tools))
    with open_store(
        settings(ctx).store,
        read_only=True,
        host_inspector=LocalHostInspector(tool_names=names),
        safe_boundary_resume=True,
    ) as runtime:
        if session is not None:
            written = write_session_report(runtime, session, output)
        else:
            assert run is not None
            written = write_run_report(runtime, run, output)
    console.print(str(written), highlight=False)
