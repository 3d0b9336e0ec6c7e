"""``maka-es crash-matrix``: the SIGKILL harness over every failpoint (docs/cli.md#prove).

Why a child process: the harness is the test kit (``maka_es.testing.crash_matrix``), which the
library never imports (import-linter); the CLI spawns it with ``python -m``, as ``make demo``
spawns the example child, and renders the JSON lines it prints: a progress bar while the cases
run, then expected against observed, and exit 1 on any mismatch (ADR 0029). Every case runs on
a fresh store of the chosen kind: a SQLite file in a scratch directory, or, for a PostgreSQL
``--store``, a scratch schema on that server, dropped afterwards; the operator's own tables are
never written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from maka_es.cli.output import EXIT_ERROR, console, emit_json, err_console
from maka_es.cli.root import JsonFlag, app, settings
from maka_es.cli.store import is_postgres, sqlite_path
from maka_es.errors import CommandLineUsageError

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


def _print(results: list[dict[str, Any]]) -> None:
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


@app.command("crash-matrix")
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
        _print(results)
    if mismatches(results):
        raise typer.Exit(EXIT_ERROR)
