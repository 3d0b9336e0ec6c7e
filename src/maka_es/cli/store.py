"""What every ``maka-es`` command shares: the store it opens, the options it takes, how it prints
and how it exits (docs/cli.md#global-options, docs/cli.md#exit-codes; ADR 0029).

Why one module: every command opens its store the same way, read commands read-only on SQLite
(``mode=ro`` makes "planning never writes" a property of the file handle, not of our care), and
a PostgreSQL URL goes to ``RuntimeApplication.open`` (ADR 0028); a URL of another scheme is a
usage error (exit 2) before anything is opened or created; ``sqlite:///PATH`` is the file PATH.
Every command reports the same way: success prints a rich table or, with ``--json``, one JSON
document on stdout; a failure prints ONE line on stderr, ``error [code]: what happened. what to
do: ...``, whose action comes from the code registry (docs/exceptions.md), and exits with a
documented code (a traceback only with ``--debug``). The rows the inspect commands print are
plain dicts built here, one shape for the table and ``--json``, so the documented JSON shapes
(docs/cli.md#json-shapes) and the tables cannot drift apart.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from maka_es.adapters.event_store import is_postgres_url, sqlite_path_of
from maka_es.app import RuntimeApplication
from maka_es.codes import REGISTRY
from maka_es.errors import (
    CommandLineUsageError,
    MakaError,
    StoreCorruptionError,
    StorePathError,
)
from maka_es.ledger.service import SessionInfo
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.resolver import ToolDecision
from maka_es.wire.events import RuntimeEvent, classify_lane
from maka_es.wire.run_header import RunHeader

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_PARKED = 3
EXIT_CORRUPTION = 4

#: Tables go to stdout; progress and errors to stderr. Piped output is not cut at 80 columns.
console = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 240)
err_console = Console(stderr=True, soft_wrap=True)


@dataclass(frozen=True)
class Settings:
    """The global options, shared by every command through the typer context."""

    store: str
    debug: bool = False


def host_action(code: str) -> str:
    """The registry's action for ``code`` (an error or a revalidation refusal)."""
    for kind in ("error", "revalidation"):
        entry = REGISTRY.get(kind, code)
        if entry is not None:
            return entry.host_action
    return "see docs/exceptions.md"


def one_line(text: str) -> str:
    """``text`` on one line, without a trailing period (the line adds its own)."""
    return " ".join(str(text).split()).rstrip(".")


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def failure_line(exc: BaseException) -> tuple[str, int]:
    """The one line printed for ``exc`` and the exit code it maps to."""
    if isinstance(exc, CommandLineUsageError):
        message, action = one_line(str(exc.args[0])), _flat(exc.detail["action"])
        return f"error [{exc.code}]: {message}. what to do: {action}", EXIT_USAGE
    if isinstance(exc, MakaError):
        message = one_line(str(exc.args[0]) if exc.args else exc.code)
        line = f"error [{exc.code}]: {message}. what to do: {_flat(host_action(exc.code))}"
        exit_code = EXIT_CORRUPTION if isinstance(exc, StoreCorruptionError) else EXIT_ERROR
        return line, exit_code
    detail = one_line(f"{type(exc).__name__}: {exc}")
    return (
        f"error [internal]: {detail}. what to do: rerun with --debug and report the traceback",
        EXIT_ERROR,
    )


def emit_json(document: Any) -> None:
    """One JSON document on stdout (sorted keys: stable to diff and to test)."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


# -- the store

#: The store used when neither ``--store`` nor ``MAKA_ES_STORE`` names one.
DEFAULT_STORE = "./.maka/runtime.sqlite"
STORE_ENV = "MAKA_ES_STORE"


def is_postgres(store: str) -> bool:
    return is_postgres_url(store)


def sqlite_path(store: str) -> str:
    """The SQLite file ``--store`` names (a path, or ``sqlite:///PATH``); any other URL scheme
    is a usage error (exit 2), raised before anything is opened or created."""
    try:
        return sqlite_path_of(store)
    except StorePathError as exc:
        raise CommandLineUsageError(
            str(exc.args[0]),
            "pass --store a SQLite path, sqlite:///PATH or postgresql://user:pw@host:port/db",
        ) from None


def open_store(store: str, *, read_only: bool = False, **kwargs: Any) -> RuntimeApplication:
    """The application on ``store``: a SQLite path, or a PostgreSQL URL.

    A writable SQLite open creates the file's directory (``./.maka`` by default) so the first
    ``import`` or ``recover`` just works; a read-only open of a missing file is refused by the
    store itself (``store_path_unusable``) and nothing is created.
    """
    if is_postgres(store):
        # Read commands run in read-only transactions: the server itself refuses any write.
        return RuntimeApplication.open(store, read_only=read_only, **kwargs)
    path = Path(sqlite_path(store))
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    return RuntimeApplication.open_sqlite(str(path), read_only=read_only, **kwargs)


def store_from_environment() -> str:
    return os.environ.get(STORE_ENV) or DEFAULT_STORE


# -- the options every command takes


def settings(ctx: typer.Context) -> Settings:
    """The global options of this invocation."""
    found = ctx.find_object(Settings)
    if found is None:  # a command invoked without the group: defaults
        return Settings(store=DEFAULT_STORE)
    return found


#: The ``--json`` option every read command takes.
JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/cli.md).")]
#: ``--tool NAME`` (repeat): a tool name this host offers, for the host inspector.
ToolNamesOption = Annotated[
    list[str] | None,
    typer.Option("--tool", help="A tool name this host offers (repeat)."),
]
#: ``--tools module:factory``: the host's tool catalogue (the agent loop runs them).
ToolsFactoryOption = Annotated[
    str | None, typer.Option("--tools", help="module:factory returning the host's tools.")
]


# -- the rows the inspect commands print


def session_row(info: SessionInfo) -> dict[str, Any]:
    return {
        "sessionId": info.session_id,
        "cwd": info.cwd,
        "workspaceIdentity": info.workspace_identity,
        "openedAt": info.opened_at,
        "runIds": list(info.run_ids),
    }


def run_row(header: RunHeader) -> dict[str, Any]:
    """The run header exactly as the reference AgentRun JSON (by alias)."""
    return header.to_wire()


def _decision_text(decision: ToolDecision | None) -> str | None:
    return None if decision is None else f"{decision.status}/{decision.reason}"


def _by_event_id(
    operations: tuple[ToolOperationState, ...], decisions: tuple[ToolDecision, ...]
) -> tuple[dict[str, ToolOperationState], dict[str, ToolDecision]]:
    """Which operation and which resolver decision each tool event belongs to."""
    operation_of: dict[str, ToolOperationState] = {}
    for operation in operations:
        for event_id in (operation.call_event_id, operation.dispatch_event_id):
            if event_id is not None:
                operation_of[event_id] = operation
        if operation.result_event_id is not None:
            operation_of[operation.result_event_id] = operation
    decision_of: dict[str, ToolDecision] = {}
    for decision in decisions:
        for event_id in (
            decision.call_runtime_event_id,
            decision.dispatch_runtime_event_id,
            decision.response_runtime_event_id,
        ):
            if event_id is not None:
                decision_of[event_id] = decision
    return operation_of, decision_of


def _tool_name(event: RuntimeEvent, operation: ToolOperationState | None) -> str | None:
    if event.function_call is not None:
        return event.function_call.name
    if event.function_response is not None:
        return event.function_response.name
    return None if operation is None else operation.tool_name


def ledger_rows(app: RuntimeApplication, run_id: str) -> list[dict[str, Any]]:
    """``show RUN``: one row per committed event, with its lane, operation and decision."""
    events = app.read_run_events(run_id)
    operation_of, decision_of = _by_event_id(
        app.tool_journal.tool_operations(run_id), app.tool_journal.resolve_run(run_id).decisions
    )
    rows = []
    for seq, event in enumerate(events, start=1):
        operation = operation_of.get(event.id)
        rows.append(
            {
                "seq": seq,
                "eventId": event.id,
                "lane": classify_lane(event).lane,
                "role": event.role,
                "tool": _tool_name(event, operation),
                "operationId": None if operation is None else operation.operation_id,
                "operationState": None if operation is None else operation.state,
                "decision": _decision_text(decision_of.get(event.id)),
                "terminal": event.is_terminal,
            }
        )
    return rows


def operation_rows(app: RuntimeApplication, run_id: str) -> list[dict[str, Any]]:
    """``ops RUN``: every tool operation with its journal state and the resolver's decision."""
    decisions = {
        d.operation_id: d for d in app.tool_journal.resolve_run(run_id).decisions if d.operation_id
    }
    rows = []
    for operation in app.tool_journal.tool_operations(run_id):
        decision = decisions.get(operation.operation_id)
        rows.append(
            {
                "operationId": operation.operation_id,
                "toolCallId": operation.tool_call_id,
                "toolName": operation.tool_name,
                "recoveryMode": operation.recovery_mode,
                "journalState": operation.state,
                "observation": operation.observation,
                "decision": None
                if decision is None
                else decision.model_dump(mode="json", by_alias=True),
            }
        )
    return rows
