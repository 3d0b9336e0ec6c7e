"""Repair: ``recover``, ``attest RUN OP``, ``fork RUN --before OP [--execute]``, ``end-run RUN``
(docs/cli.md#repair).

Why thin: each is one public command of the application (startup recovery, ADR 0019; the
operator actions, ADR 0022; ending a start-only run, ADR 0035); the CLI adds the progress
display, the report and the exit code. Progress goes to stderr so ``--json`` keeps stdout one
document. Each is idempotent with one winner: a repeat, or the loser of two processes, gets a
typed refusal (exit 1) or ``created: false``, and nothing is written twice.
"""

from __future__ import annotations

import getpass
import json
from typing import Annotated, Any

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn

from maka_es.cli.output import EXIT_ERROR, console, emit_json, err_console
from maka_es.cli.providers import DEFAULT_PROVIDER, load_provider, load_tools, outcome_document
from maka_es.cli.root import JsonFlag, ToolsFactoryOption, app, settings
from maka_es.cli.store import open_store
from maka_es.recovery.startup import LEFT_KINDS


def _login_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in this environment (containers)
        return "operator"


@app.command()
def recover(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Run startup recovery over every run that needs attention and print its report."""
    with (
        open_store(settings(ctx).store) as runtime,
        Progress(
            SpinnerColumn(), TextColumn("{task.description}"), console=err_console, transient=True
        ) as progress,
    ):
        step = progress.add_task("catching up the recovery-status read model", total=2)
        attention = runtime.recovery_status.needing_attention()
        progress.update(
            step, advance=1, description=f"recovering {len(attention)} run(s) needing attention"
        )
        report = runtime.recover()
        progress.update(step, advance=1, description="done")
    repairs = [{"runId": r.run_id, "kind": r.kind, "detail": r.detail} for r in report.repairs]
    if as_json:
        emit_json({"repairs": repairs, "changedAnything": report.changed_anything})
        return
    if not repairs:
        console.print("nothing to recover")
    for repair in repairs:
        style = "yellow" if repair["kind"] in LEFT_KINDS else "green"
        console.print(f"[{style}]{repair['kind']}[/{style}] {repair['runId']}", highlight=False)
    console.print(f"changed anything: {report.changed_anything}")


def _result_value(text: str | None) -> Any:
    """``--result`` is JSON when it parses as JSON, else the plain string."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


@app.command()
def attest(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    operation: Annotated[str, typer.Argument(help="Operation id (see `maka-es ops RUN`).")],
    applied: Annotated[
        bool,
        typer.Option("--applied/--not-applied", help="Did the operation take effect?"),
    ],
    actor: Annotated[str, typer.Option("--actor", help="Who decides (recorded).")],
    note: Annotated[str, typer.Option("--note", help="Why (recorded).")] = "",
    result: Annotated[
        str | None, typer.Option("--result", help="What the model sees (JSON or text).")
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """Record an operator's decision about an indeterminate operation (ADR 0022); once nothing
    else of the run awaits a decision, its recovery is finished (the run is ended)."""
    with open_store(settings(ctx).store) as runtime:
        report = runtime.attest_operation(
            run, operation, applied=applied, result=_result_value(result), actor=actor, note=note
        )
    document = report.to_dict()
    if as_json:
        emit_json(document)
        return
    verb = "recorded" if report.created else "already recorded"
    console.print(f"{verb}: {operation} of {run} applied={applied}", highlight=False)
    for repair in report.recovery:  # the run's recovery, finished once nothing awaits an operator
        console.print(f"recovery: {repair.kind} {run}", markup=False, highlight=False)


@app.command()
def fork(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    before: Annotated[str, typer.Option("--before", help="Operation id to fork before.")],
    actor: Annotated[
        str | None, typer.Option("--actor", help="Who decides (default: login name).")
    ] = None,
    note: Annotated[str, typer.Option("--note", help="Why (recorded).")] = "",
    execute: Annotated[
        bool, typer.Option("--execute", help="Then run the fork's agent loop (once).")
    ] = False,
    provider: Annotated[
        str, typer.Option("--provider", help="module:factory returning a Provider.")
    ] = DEFAULT_PROVIDER,
    tools: ToolsFactoryOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Fork RUN before an uncertain operation (the source stays untouched; ADR 0022) and, with
    --execute, run the fork through the continuation's agent loop."""
    chosen = load_provider(provider) if execute else None
    with open_store(settings(ctx).store, tools=load_tools(tools)) as runtime:
        report = runtime.fork_run(
            run, before_operation=before, actor=actor or _login_name(), note=note
        )
        outcome = None if chosen is None else runtime.execute_fork(report.fork_run_id, chosen)
    document = report.to_dict()
    if outcome is not None:
        document["outcome"] = outcome_document(outcome)
    if as_json:
        emit_json(document)
    else:
        verb = "forked" if report.created else "already forked"
        console.print(
            f"{verb}: {report.fork_run_id} continues {run} up to event {report.high_water}",
            highlight=False,
        )
        if outcome is not None:
            console.print(f"ran {outcome.target_run_id}: {outcome.status}", highlight=False)
    if outcome is not None and outcome.status != "completed":
        raise typer.Exit(EXIT_ERROR)


@app.command("end-run")
def end_run(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id (a continuation or fork).")],
    as_json: JsonFlag = False,
) -> None:
    """End a continuation or fork that holds only its start and whose process is gone."""
    with open_store(settings(ctx).store) as runtime:
        report = runtime.end_start_only_run(run)
    if as_json:
        emit_json(report.to_dict())
        return
    console.print(f"ended: {run} ({report.recovery_reason})", highlight=False)
