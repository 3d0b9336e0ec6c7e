"""Data and proof: ``import DIR``, ``export RUN --format ...``, ``schema`` (docs/cli.md#move-data),
``verify`` (docs/cli.md#verify) and ``crash-matrix`` (docs/cli.md#prove).

Why these formats: ``jsonl`` is the reference runtime's file layout (byte-compatible rows;
``adapters/jsonl.py``); ``openai`` and ``anthropic`` are the run as the model-facing message
lists a provider would be sent (``providers/export.py``), so an operator can replay
a run by hand. ``schema`` is pydantic's JSON Schema of the RuntimeEvent wire model.

Why ``verify`` checks three levels: SQLite's own ``integrity_check`` finds a damaged file;
decoding every stored row through the fact mapper finds a row that is intact for SQLite but no
longer a fact (it fails closed with ``store_corruption``); and folding each run through the
recovery resolver finds a ledger whose tool facts contradict each other (``has_corruption``).
Only these are corruption (exit 4); a blocked plan is reported, not failed.

Why ``crash-matrix`` runs a child process: the harness is the test kit
(``maka_es.testing.crash_matrix``), which the library never imports (import-linter); the CLI
spawns it with ``python -m``, as ``make demo`` spawns the example child, and renders the JSON
lines it prints: a progress bar while the cases run, then expected against observed, and exit 1
on any mismatch (ADR 0029). Every case runs on a fresh store of the chosen kind: a SQLite file
in a scratch directory, or, for a PostgreSQL ``--store``, a scratch schema on that server,
dropped afterwards; the operator's own tables are never written.
"""

from __future__ import annotations

import enum
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from maka_es.adapters.confined_fs import refuse_unusable_output
from maka_es.adapters.jsonl import JsonlLedger, export_jsonl_run, import_jsonl_ledgers
from maka_es.app import RuntimeApplication
from maka_es.cli.store import (
    EXIT_CORRUPTION,
    EXIT_ERROR,
    JsonFlag,
    console,
    emit_json,
    err_console,
    is_postgres,
    open_store,
    settings,
    sqlite_path,
)
from maka_es.errors import (
    CommandLineUsageError,
    MakaError,
    ReportOutputError,
    StoreCorruptionError,
)
from maka_es.providers.export import to_anthropic_messages, to_openai_chat_messages
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent


class ExportFormat(enum.StrEnum):
    jsonl = "jsonl"
    openai = "openai"
    anthropic = "anthropic"


def import_(
    ctx: typer.Context,
    directory: Annotated[Path, typer.Argument(help="Root of a reference JSONL ledger.")],
    as_json: JsonFlag = False,
) -> None:
    """Import every run under DIR (sessions/<s>/runs/<r>/); safe to repeat."""
    if not directory.is_dir():
        raise CommandLineUsageError(
            f"{directory} is not a directory", "pass the ledger root directory"
        )
    store, ledger = settings(ctx).store, JsonlLedger(directory)
    if not is_postgres(store) and not Path(sqlite_path(store)).exists():
        _rehearse(ledger)
    with open_store(store) as runtime:
        report = import_jsonl_ledgers(runtime.ledger, ledger)
    document = {"runs": report.runs, "appended": report.appended, "retried": report.retried}
    if as_json:
        emit_json(document)
        return
    console.print(
        f"imported {report.runs} run(s): {report.appended} event(s) appended, "
        f"{report.retried} already present",
        highlight=False,
    )


def _rehearse(ledger: JsonlLedger) -> None:
    """Import into an empty in-memory store first, with the same gates: a refused import then
    creates neither the SQLite file nor its directory. Only for a store that does not exist
    yet (an existing one is not created by the import, and its own content may decide)."""
    with RuntimeApplication.in_memory() as rehearsal:
        import_jsonl_ledgers(rehearsal.ledger, ledger)


def export(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    format_: Annotated[ExportFormat, typer.Option("--format", help="Output format.")] = (
        ExportFormat.jsonl
    ),
    output: Annotated[
        Path | None,
        typer.Option("-o", "--output", help="jsonl only: write the reference layout under DIR."),
    ] = None,
) -> None:
    """Print RUN as JSONL rows, or as OpenAI / Anthropic messages (JSON)."""
    if output is not None and format_ is not ExportFormat.jsonl:
        raise CommandLineUsageError(
            "-o/--output writes the JSONL layout only", "drop -o or use jsonl"
        )
    if output is not None:
        refuse_unusable_output(output, kind="directory", what="a ledger")
    with open_store(settings(ctx).store, read_only=True) as runtime:
        if output is not None:
            _export_to(runtime, output, run)
            return
        events = runtime.read_run_events(run)
    if format_ is ExportFormat.jsonl:
        sys.stdout.write("".join(canonical_json(event.to_wire()) + "\n" for event in events))
    elif format_ is ExportFormat.openai:
        emit_json(to_openai_chat_messages(events))
    else:
        emit_json(to_anthropic_messages(events))


def _export_to(runtime: RuntimeApplication, output: Path, run: str) -> None:
    """The reference layout of ``run`` under ``output``; an ``OSError`` the check could not
    foresee (the disk filled, the directory vanished) is the same typed refusal."""
    try:
        export_jsonl_run(runtime.ledger, JsonlLedger(output), run)
    except MakaError:
        raise
    except OSError as exc:
        raise ReportOutputError(
            f"cannot write a ledger to {str(output)!r}: {exc.strerror or exc}",
            detail={"path": str(output), "reason": "write_failed"},
        ) from None
    console.print(f"exported {run} under {output}", highlight=False)


def schema(as_json: JsonFlag = True) -> None:
    """The JSON Schema of RuntimeEvent (always JSON; --json accepted for symmetry)."""
    document = RuntimeEvent.model_json_schema(by_alias=True)
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")


def sqlite_integrity(path: str) -> str:
    """``ok``, or SQLite's first complaint about the file (opened read-only)."""
    uri = f"file:{Path(path).resolve()}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"
    try:
        rows = connection.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return f"unreadable: {exc}"
    finally:
        connection.close()
    answers = [str(row[0]) for row in rows]
    return "ok" if answers == ["ok"] else "; ".join(answers[:5])


def corrupt_rows(runtime: RuntimeApplication) -> list[dict[str, Any]]:
    """Every stored row the fact mapper refuses to decode."""
    found: list[dict[str, Any]] = []
    start = 1
    while True:
        page = runtime._es.recorder.select_notifications(start=start, limit=500)
        for row in page:
            try:
                runtime._es.mapper.to_domain_event(row)
            except StoreCorruptionError as exc:
                found.append(
                    {
                        "notificationId": row.id,
                        "originatorId": str(row.originator_id),
                        "topic": row.topic,
                        "error": str(exc.args[0]),
                    }
                )
        if len(page) < 500:
            return found
        start = page[-1].id + 1


def run_health(runtime: RuntimeApplication, run_id: str) -> dict[str, Any]:
    """One run: ``ok``, ``needs_attention`` (blocked plan), ``corrupt`` or ``unreadable``."""
    try:
        resolution = runtime.tool_journal.resolve_run(run_id)
        plan = runtime.plan_resume(run_id)
    except StoreCorruptionError as exc:
        return {"runId": run_id, "health": "corrupt", "issues": [exc.code], "disposition": None}
    except MakaError as exc:
        return {"runId": run_id, "health": "unreadable", "issues": [exc.code], "disposition": None}
    issues = [issue.code for issue in resolution.issues]
    if resolution.has_corruption:
        health = "corrupt"
    elif plan.disposition == "blocked":
        health = "needs_attention"
    else:
        health = "ok"
    return {"runId": run_id, "health": health, "issues": issues, "disposition": plan.disposition}


def _run_healths(run_ids: list[str], check: Any) -> list[dict[str, Any]]:
    columns = (TextColumn("verifying runs"), BarColumn(), MofNCompleteColumn())
    with Progress(*columns, console=err_console, transient=True) as progress:
        task = progress.add_task("runs", total=len(run_ids))
        found = []
        for run_id in run_ids:
            found.append(check(run_id))
            progress.advance(task)
    return found


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
        runs = _run_healths(run_ids, lambda run_id: run_health(runtime, run_id))
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


SUITES = ("phase0", "tooljournal", "continuation")
HARNESS = "maka_es.testing.crash_matrix"


def _stream(
    workdir: Path, seeds: int, suites: list[str], postgres: str | None
) -> list[dict[str, Any]]:
    on_server = ["--store", postgres] if postgres is not None else []
    argv = [sys.executable, "-m", HARNESS, *on_server, str(workdir), str(seeds), *suites]
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    results: list[dict[str, Any]] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn())
    try:
        with Progress(*columns, console=err_console, transient=True) as progress:
            task = progress.add_task("SIGKILL at each failpoint", total=None)
            for line in child.stdout:
                message = json.loads(line)
                if "total" in message:
                    progress.update(task, total=message["total"])
                    continue
                results.append(message)
                label = f"{message['suite']} {message['case']}"
                progress.update(task, advance=1, description=label)
        _, stderr = child.communicate()
    finally:
        if child.poll() is None:  # interrupted: do not leave the harness running
            child.kill()
            child.wait()
    if child.returncode != 0:
        raise RuntimeError(f"the crash harness failed: {stderr.strip()[-500:]}")
    return results


def mismatches(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [result for result in results if not result["ok"]]


def _print_cases(results: list[dict[str, Any]]) -> None:
    table = Table(title="crash matrix: expected vs observed")
    for column in ("suite", "case", "seed", "expected", "observed", "ok"):
        table.add_column(column, overflow="fold")
    for r in results:
        mark = "[green]yes[/green]" if r["ok"] else "[red]MISMATCH[/red]"
        expected, observed = json.dumps(r["expected"]), json.dumps(r["observed"])
        table.add_row(r["suite"], r["case"], str(r["seed"]), expected, observed, mark)
    console.print(table)
    bad = len(mismatches(results))
    console.print(f"{len(results)} case(s), {bad} mismatch(es)")


def crash_matrix(
    ctx: typer.Context,
    seeds: Annotated[int, typer.Option("--seeds", min=1, help="Repetitions of every case.")] = 1,
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", help="phase0, tooljournal or continuation (repeat; default all)."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Kill a real child at every failpoint and compare the decisions; exit 1 on a mismatch."""
    store = settings(ctx).store
    postgres = store if is_postgres(store) else None
    if postgres is None:
        sqlite_path(store)  # another URL scheme is a usage error here too
    chosen = list(dict.fromkeys(suite or SUITES))
    unknown = [name for name in chosen if name not in SUITES]
    if unknown:
        raise CommandLineUsageError(
            f"unknown suite(s) {unknown}", f"choose from {', '.join(SUITES)}"
        )
    workdir = Path(tempfile.mkdtemp(prefix="maka-es-crash-matrix-"))
    try:
        results = _stream(workdir, seeds, chosen, postgres)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if as_json:
        emit_json({"cases": results, "mismatches": len(mismatches(results))})
    else:
        _print_cases(results)
    if mismatches(results):
        raise typer.Exit(EXIT_ERROR)
