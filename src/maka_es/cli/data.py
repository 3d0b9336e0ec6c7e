"""Move data: ``import DIR``, ``export RUN --format ...``, ``schema`` (docs/cli.md#move-data).

Why these formats: ``jsonl`` is the reference runtime's file layout (byte-compatible rows;
``adapters/jsonl.py``); ``openai`` and ``anthropic`` are the run as the model-facing message
lists a provider would be sent (``providers/export.py``), so an operator can replay
a run by hand. ``schema`` is pydantic's JSON Schema of the RuntimeEvent wire model.
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from maka_es.adapters.confined_fs import refuse_unusable_output
from maka_es.adapters.jsonl import JsonlLedger, export_jsonl_run, import_jsonl_ledgers
from maka_es.app import RuntimeApplication
from maka_es.cli.output import console, emit_json
from maka_es.cli.root import JsonFlag, app, settings
from maka_es.cli.store import is_postgres, open_store, sqlite_path
from maka_es.errors import CommandLineUsageError, MakaError, ReportOutputError
from maka_es.providers.export import to_anthropic_messages, to_openai_chat_messages
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent


class ExportFormat(enum.StrEnum):
    jsonl = "jsonl"
    openai = "openai"
    anthropic = "anthropic"


@app.command("import")
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


@app.command()
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


@app.command()
def schema(as_json: JsonFlag = True) -> None:
    """The JSON Schema of RuntimeEvent (always JSON; --json accepted for symmetry)."""
    document = RuntimeEvent.model_json_schema(by_alias=True)
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True) + "\n")
