"""``maka-es verify``: store integrity and the resolver health of every run (exit 4 on
corruption; docs/cli.md#verify). The checks themselves are in ``cli/integrity.py``."""

from __future__ import annotations

from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from maka_es.cli.integrity import corrupt_rows, run_health, sqlite_integrity
from maka_es.cli.output import EXIT_CORRUPTION, console, emit_json, err_console
from maka_es.cli.root import JsonFlag, app, settings
from maka_es.cli.store import is_postgres, open_store, sqlite_path
from maka_es.errors import StoreCorruptionError


def _runs(run_ids: list[str], check: Any) -> list[dict[str, Any]]:
    columns = (TextColumn("verifying runs"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("runs", total=len(run_ids))
        found = []
        for run_id in run_ids:
            found.append(check(run_id))
            progress.advance(task)
    return found


@app.command()
def verify(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Check the store file, every stored row and every run; exit 4 on corruption."""
    store = settings(ctx).store
    with open_store(store, read_only=True) as runtime:
        file_check = (
            "not_applicable" if is_postgres(store) else sqlite_integrity(sqlite_path(store))
        )
        rows = corrupt_rows(runtime)
        try:
            run_ids = runtime.ledger.all_run_ids()
        except StoreCorruptionError:  # the run index itself cannot be read: rows say why
            run_ids = []
        runs = _runs(run_ids, lambda run_id: run_health(runtime, run_id))
    corrupt = file_check not in {"ok", "not_applicable"} or bool(rows)
    corrupt = corrupt or any(r["health"] == "corrupt" for r in runs)
    document = {
        "storeIntegrity": file_check,
        "corruptRows": rows,
        "runs": runs,
        "corruption": corrupt,
    }
    if as_json:
        emit_json(document)
    else:
        console.print(f"store file: {file_check}", highlight=False)
        for row in rows:
            console.print(
                f"[red]corrupt row[/red] {row['notificationId']} ({row['topic']}): {row['error']}",
                highlight=False,
            )
        for run in runs:
            style = {"ok": "green", "needs_attention": "yellow"}.get(run["health"], "red")
            detail = ", ".join(run["issues"]) or (run["disposition"] or "")
            console.print(
                f"[{style}]{run['health']}[/{style}] {run['runId']} {detail}", highlight=False
            )
        console.print("corruption found" if corrupt else "no corruption found")
    if corrupt:
        raise typer.Exit(EXIT_CORRUPTION)
