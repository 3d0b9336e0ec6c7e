"""Decide: ``plan RUN`` (Phase 0) and ``continue SESSION`` (Phase 1) (docs/cli.md#decide).

Why exit 3: a blocked or parked plan is not an error of the command but an answer a script must
branch on, so it has its own exit code. Plans print with the reference field names (the plan
models' own JSON, by alias). Planning opens the store read-only; ``continue`` without
``--dry-run`` is the operator's explicit opt-in to Phase 1 on this store, so it enables it for
this application (ADR 0029).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from maka_es.adapters.workspace import LocalHostInspector
from maka_es.cli.output import EXIT_PARKED, console, emit_json
from maka_es.cli.providers import (
    DEFAULT_PROVIDER,
    host_tool_names,
    load_provider,
    load_tools,
    outcome_document,
)
from maka_es.cli.root import JsonFlag, ToolNamesOption, ToolsFactoryOption, app, settings
from maka_es.cli.store import open_store


def _print_plan(title: str, document: dict[str, Any], disposition: str) -> None:
    console.print(f"{title}: [bold]{disposition}[/bold]")
    for reason in document.get("rejectionReasons", []):
        console.print(f"  reason: [red]{reason}[/red]", highlight=False)
    for diagnostic in document.get("diagnostics", []):
        console.print(
            f"  diagnostic: {_diagnostic_line(diagnostic)}", markup=False, highlight=False
        )


#: Phase 0 codes of a call whose tool may have run with no result committed (ADR 0022).
_MAY_HAVE_RUN = frozenset({"pending_tool_result", "tool_recovery_parked"})


def _diagnostic_line(diagnostic: dict[str, Any]) -> str:
    """The code and its message; a call whose tool may have run says so, by tool and call."""
    line = f"{diagnostic.get('code')}: {diagnostic.get('message', '')}"
    if diagnostic.get("code") in _MAY_HAVE_RUN and diagnostic.get("toolName"):
        line += (
            f" (tool {diagnostic['toolName']}, call {diagnostic.get('toolCallId')}, "
            "may have run: see `maka-es ops`, then attest or fork)"
        )
    return line


@app.command()
def plan(
    ctx: typer.Context,
    run: Annotated[str, typer.Argument(help="Run id.")],
    expected_high_water: Annotated[
        int | None,
        typer.Option("--expected-high-water", help="Your view of the run's committed count."),
    ] = None,
    as_json: JsonFlag = False,
) -> None:
    """The Phase 0 resume plan of RUN (exit 3 when blocked)."""
    with open_store(settings(ctx).store, read_only=True) as runtime:
        resume = runtime.plan_resume(run, expected_high_water)
    document = resume.model_dump(mode="json", by_alias=True)
    if as_json:
        emit_json(document)
    else:
        _print_plan(f"resume plan of {run}", document, resume.disposition)
        replay = [e.id for e in resume.replay_runtime_events]
        console.print(f"  replay: {replay}", markup=False, highlight=False)
        for operation in resume.operations:
            console.print(
                f"  operation {operation.tool_name}: {operation.status}",
                markup=False,
                highlight=False,
            )
    if resume.disposition == "blocked":
        raise typer.Exit(EXIT_PARKED)


@app.command("continue")
def continue_(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id.")],
    run: Annotated[str | None, typer.Option("--run", help="Source run (default: newest).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan only; write nothing.")] = False,
    provider: Annotated[
        str, typer.Option("--provider", help="module:factory returning a Provider.")
    ] = DEFAULT_PROVIDER,
    tool: ToolNamesOption = None,
    tools: ToolsFactoryOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Plan the Phase 1 continuation of SESSION and, without --dry-run, execute it (``resume``
    is the same command)."""
    catalogue = load_tools(tools)
    names = host_tool_names(tool, catalogue)
    with open_store(
        settings(ctx).store,
        read_only=dry_run,
        host_inspector=LocalHostInspector(tool_names=names),
        safe_boundary_resume=True,
        tools=catalogue,
    ) as runtime:
        chosen = runtime.plan_continuation(session, run)
        document: dict[str, Any] = {"plan": chosen.model_dump(mode="json", by_alias=True)}
        parked = chosen.continuation is None
        if not parked and not dry_run:
            outcome = runtime.execute_continuation(chosen, load_provider(provider))
            document["outcome"] = outcome_document(outcome)
    if as_json:
        emit_json(document)
    else:
        _print_plan(f"continuation plan of {session}", document["plan"], chosen.disposition)
        if "outcome" in document:
            result = document["outcome"]
            console.print(
                f"continued as {result['targetRunId']}: {result['status']}",
                markup=False,
                highlight=False,
            )
    if parked:
        raise typer.Exit(EXIT_PARKED)
    if document.get("outcome", {}).get("status", "completed") != "completed":
        raise typer.Exit(1)


#: ``resume SESSION``: the documented operator name of ``continue`` (plan, then continue the
#: session from its last safe boundary); one command, two names, no second implementation.
app.command("resume", help="Resume SESSION: the same command as `continue`.")(continue_)
