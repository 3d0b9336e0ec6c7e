"""The operator's commands: ``plan RUN`` and ``continue``/``resume SESSION`` (docs/cli.md#decide),
``recover``, ``attest RUN OP``, ``fork RUN --before OP [--execute]`` and ``end-run RUN``
(docs/cli.md#repair), with the host's provider and tools they run an agent loop with.

Why exit 3: a blocked or parked plan is not an error of the command but an answer a script must
branch on, so it has its own exit code. Plans print with the reference field names (the plan
models' own JSON, by alias). Planning opens the store read-only; ``continue`` without
``--dry-run`` is the operator's explicit opt-in to Phase 1 on this store, so it enables it for
this application (ADR 0029).

Why thin: each repair is one public command of the application (startup recovery, ADR 0019; the
operator actions, ADR 0022; ending a start-only run, ADR 0035); the CLI adds the progress
display, the report and the exit code. Progress goes to stderr so ``--json`` keeps stdout one
document. Each is idempotent with one winner: a repeat, or the loser of two processes, gets a
typed refusal (exit 1) or ``created: false``, and nothing is written twice.

Why a scripted default provider: the CLI ships no model client (the SDKs are an extra), and an
operator proving a continuation end to end needs one that answers deterministically; a host
passes its own factory with ``--provider my_host.providers:make`` and its tools with ``--tools
my_host.tools:make`` (docs/cli.md#decide). Why factories: a provider and a tool catalogue are
objects of the host's code, not command-line values.
"""

from __future__ import annotations

import getpass
import importlib
import json
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn

from maka_es.adapters.workspace import LocalHostInspector
from maka_es.cli.store import (
    EXIT_ERROR,
    EXIT_PARKED,
    JsonFlag,
    ToolNamesOption,
    ToolsFactoryOption,
    console,
    emit_json,
    err_console,
    open_store,
    settings,
)
from maka_es.continuation.executor import ContinuationOutcome
from maka_es.errors import CommandLineUsageError
from maka_es.providers.protocol import Provider, ProviderTurn, ScriptedProvider
from maka_es.recovery.startup import LEFT_KINDS
from maka_es.tooljournal.model.tools import Tool

DEFAULT_PROVIDER = "maka_es.cli.operator:scripted_provider"
#: What the default provider answers: one text turn, no tool call, so the loop ends.
SCRIPTED_ANSWER = "continued by maka-es (scripted provider)"


def scripted_provider() -> Provider:
    """One turn with one text output (the default of ``--provider``)."""
    return ScriptedProvider([ProviderTurn(outputs=({"kind": "text", "text": SCRIPTED_ANSWER},))])


def _factory(option: str, spec: str) -> Callable[[], Any]:
    """The zero-argument callable named ``module:factory`` (a usage error otherwise)."""
    module_name, _, factory_name = spec.partition(":")
    if not module_name or not factory_name:
        raise CommandLineUsageError(
            f"{option} {spec!r} is not module:factory", "pass e.g. my_host.providers:make"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CommandLineUsageError(
            f"{option} module {module_name!r} cannot be imported ({exc})",
            "install it or put it on PYTHONPATH",
        ) from exc
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise CommandLineUsageError(
            f"{option} {spec!r}: {module_name} has no callable {factory_name!r}",
            "name a function that takes no argument",
        )
    return factory  # type: ignore[no-any-return]


def load_provider(spec: str) -> Provider:
    """Call the factory named ``module:factory`` and check it returned a provider."""
    provider = _factory("--provider", spec)()
    if not callable(getattr(provider, "complete", None)):
        raise CommandLineUsageError(
            f"--provider {spec!r} returned {type(provider).__name__}, which has no complete()",
            "return an object with complete(ProviderRequest) -> ProviderTurn",
        )
    return provider  # type: ignore[no-any-return]


def load_tools(spec: str | None) -> tuple[Tool[Any], ...]:
    """The host's tool catalogue from ``--tools module:factory`` (none when not given): the
    agent loop runs the tools the model calls through the application's ToolRuntime."""
    if spec is None:
        return ()
    made = _factory("--tools", spec)()
    try:
        tools = tuple(made)
    except TypeError:
        tools = (made,)
    for tool in tools:
        if not isinstance(tool, Tool):
            raise CommandLineUsageError(
                f"--tools {spec!r} returned {type(tool).__name__}, which is no Tool",
                "return an iterable of maka_es Tool objects",
            )
    return tools


def outcome_document(outcome: ContinuationOutcome) -> dict[str, Any]:
    """What an executed agent loop reports (the ``outcome`` of ``--json``)."""
    return {
        "targetRunId": outcome.target_run_id,
        "status": outcome.status,
        "errorClass": outcome.error_class,
        "outputs": outcome.outputs,
        "steps": outcome.steps,
        "toolCalls": outcome.tool_calls,
    }


def host_tool_names(names: list[str] | None, catalogue: tuple[Tool[Any], ...]) -> tuple[str, ...]:
    """The tool names the host inspector reports: ``--tool`` names, then the catalogue's."""
    given = tuple(names or ())
    return given + tuple(t.name for t in catalogue if t.name not in given)


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


def _login_name() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name in this environment (containers)
        return "operator"


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
