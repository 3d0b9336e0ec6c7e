"""The rows the inspect commands print, as plain dicts: one shape for the table and ``--json``.

Why one place: the JSON shapes are documented and stable (docs/cli.md#json-shapes), and the
tables show the same fields, so both are built from these functions and cannot drift apart.
"""

from __future__ import annotations

from typing import Any

from maka_es.app import RuntimeApplication
from maka_es.ledger.service import SessionInfo
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.resolver import ToolDecision
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.lanes import classify_lane
from maka_es.wire.run_header import RunHeader


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
        app.tool_operations(run_id), app.resolve_run(run_id).decisions
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
    decisions = {d.operation_id: d for d in app.resolve_run(run_id).decisions if d.operation_id}
    rows = []
    for operation in app.tool_operations(run_id):
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
