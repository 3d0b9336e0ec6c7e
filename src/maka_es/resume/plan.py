"""Phase 0 crash contract: a pure ``ResumePlan`` over a committed RuntimeEvent prefix (spec §3).

Why fail closed: after a crash the only evidence is the committed prefix. Any tool call whose
outcome is not a committed result (or whose facts contradict each other) may have changed the
world; replaying the run as if it had not would risk running it twice. The plan therefore only
says ``safe_replay`` when every visible operation is settled, no hidden nested operation is
pending, and the resolver found no corruption. It runs nothing and mutates nothing: same input,
deep-equal plan.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from maka_es.resume.models import (
    DecisionStatus,
    Diagnostic,
    DiagnosticCode,
    Resolution,
    ResumeDisposition,
    ResumePlan,
    ResumeRejectionReason,
    RuntimeEventInput,
    ToolOperation,
    ToolOperationStatus,
    decode_events,
)
from maka_es.resume.replay import provider_replay_subset
from maka_es.tooljournal.resolver import resolve_tool_operations
from maka_es.wire.events import FunctionCallContent, RuntimeEvent

__all__ = ["RESUME_DIRECTIVE", "build_resume_plan", "project_tool_operations"]

#: Instruction handed to the model whenever a tool outcome is unknown (exact text, spec §3.3).
RESUME_DIRECTIVE = (
    "Tool execution was interrupted before a matching committed tool result was found. "
    "The side effects may or may not have occurred. "
    "Do not retry the tool call immediately. "
    "Use read-only inspection tools to verify the current state before deciding the next step."
)

#: Resolver issues that keep their own diagnostic code; every other one is tool_ledger_corruption.
_SELF_NAMED_ISSUES = frozenset(
    {"protocol_marker_invalid", "duplicate_event_id", "semantic_lane_conflict"}
)

#: Diagnostics that make a prefix unsafe to replay (all map to ``dangling_tool_state``).
_DANGLING_CODES = frozenset(
    {
        "pending_tool_result",
        "tool_not_dispatched",
        "tool_recovery_parked",
        "tool_recovery_corruption",
        "tool_ledger_corruption",
        "duplicate_event_id",
        "semantic_lane_conflict",
        "protocol_marker_invalid",
        "unmatched_tool_result",
        "tool_name_mismatch",
    }
)

_OPERATION_DIAGNOSTICS: dict[str, tuple[DiagnosticCode, str]] = {
    "indeterminate": ("pending_tool_result", "tool call has no committed result; outcome unknown"),
    "not_dispatched": (
        "tool_not_dispatched",
        "tool call never crossed the durable dispatch boundary",
    ),
    "corruption": ("tool_recovery_corruption", "tool operation facts contradict each other"),
    "parked": ("tool_recovery_parked", "tool recovery ended in a parked decision"),
}

_ISSUE_MESSAGES: dict[str, str] = {
    "protocol_marker_invalid": "tool-boundary protocol marker is only valid on the first event",
    "duplicate_event_id": "an immutable event id occurs more than once",
    "semantic_lane_conflict": "event does not fit exactly one tool-fact lane",
}


_STATUS_FOR_DECISION: dict[DecisionStatus, ToolOperationStatus] = {
    "definitely_not_dispatched": "not_dispatched",
    "indeterminate": "indeterminate",
    "parked": "parked",
    "corruption": "corruption",
}


def _operation_status(
    status: DecisionStatus, response_is_error: bool | None
) -> ToolOperationStatus:
    if status == "completed":
        return "failed" if response_is_error else "succeeded"
    return _STATUS_FOR_DECISION[status]


def _visible_calls_by_event_id(events: Sequence[RuntimeEvent]) -> dict[str, FunctionCallContent]:
    calls: dict[str, FunctionCallContent] = {}
    for event in events:
        call = event.function_call
        if call is not None and not event.is_hidden:
            calls[event.id] = call
    return calls


def _operations(
    events: Sequence[RuntimeEvent], resolution: Resolution
) -> tuple[ToolOperation, ...]:
    calls = _visible_calls_by_event_id(events)
    operations: list[ToolOperation] = []
    for decision in resolution.decisions:
        if decision.call_runtime_event_id is None:
            continue  # orphan dispatch/response: reported as corruption, not as an operation
        call = calls.get(decision.call_runtime_event_id)
        if call is None:
            continue  # hidden nested (CodeMode) call: never model-facing
        status = _operation_status(decision.status, decision.response_is_error)
        operations.append(
            ToolOperation(
                tool_call_id=decision.tool_call_id,
                tool_name=call.name,
                args=copy.deepcopy(call.args),
                status=status,
                call_runtime_event_id=decision.call_runtime_event_id,
                response_runtime_event_id=decision.response_runtime_event_id,
                response_is_error=decision.response_is_error,
            )
        )
    return tuple(operations)


def project_tool_operations(events: Sequence[RuntimeEventInput]) -> tuple[ToolOperation, ...]:
    """The model-facing tool operations of a prefix (spec §3.2), in scanner order."""
    decoded = decode_events(events)
    return _operations(decoded, resolve_tool_operations(decoded))


def _hidden_indeterminate_call_ids(
    events: Sequence[RuntimeEvent], resolution: Resolution
) -> list[tuple[str, str, str | None]]:
    """``(callEventId, toolCallId, toolName)`` of indeterminate decisions whose call is hidden."""
    by_id = {event.id: event for event in events}
    pending: list[tuple[str, str, str | None]] = []
    for decision in resolution.decisions:
        if decision.status != "indeterminate" or decision.call_runtime_event_id is None:
            continue
        call_event = by_id.get(decision.call_runtime_event_id)
        if call_event is not None and call_event.is_hidden:
            pending.append(
                (decision.call_runtime_event_id, decision.tool_call_id, decision.tool_name)
            )
    return pending


def _diagnostics(
    events: Sequence[RuntimeEvent],
    operations: Sequence[ToolOperation],
    resolution: Resolution,
    hidden_pending: Sequence[tuple[str, str, str | None]],
    expected_high_water: int | None,
) -> list[Diagnostic]:
    """All diagnostics in the emission order of spec §3.4."""
    out: list[Diagnostic] = []
    if expected_high_water is not None and expected_high_water != len(events):
        out.append(
            Diagnostic(
                code="runtime_offset_mismatch",
                message="committed high-water differs from the expected high-water",
                detail={
                    "expectedRuntimeEventHighWater": expected_high_water,
                    "actualRuntimeEventHighWater": len(events),
                },
            )
        )

    for operation in operations:
        if operation.status in _OPERATION_DIAGNOSTICS:
            code, message = _OPERATION_DIAGNOSTICS[operation.status]
            out.append(
                Diagnostic(
                    code=code,
                    message=message,
                    event_id=operation.call_runtime_event_id,
                    tool_call_id=operation.tool_call_id,
                    tool_name=operation.tool_name,
                )
            )

    for issue in resolution.issues:
        if issue.code in _SELF_NAMED_ISSUES:
            out.append(
                Diagnostic(
                    code=issue.code,
                    message=_ISSUE_MESSAGES[issue.code],
                    event_id=issue.event_id,
                )
            )
        else:
            out.append(
                Diagnostic(
                    code="tool_ledger_corruption",
                    message=f"immutable tool ledger is corrupt: {issue.code}",
                    event_id=issue.event_id,
                    detail={"issueCode": issue.code},
                )
            )

    for decision in resolution.decisions:
        # call-less corruption other than an orphan response (already an unmatched result)
        if (
            decision.status != "corruption"
            or decision.call_runtime_event_id is not None
            or decision.reason == "orphan_response"
        ):
            continue
        out.append(
            Diagnostic(
                code="tool_recovery_corruption",
                message=f"tool fact has no function call: {decision.reason}",
                event_id=decision.dispatch_runtime_event_id or decision.response_runtime_event_id,
                tool_call_id=decision.tool_call_id,
                tool_name=decision.tool_name,
            )
        )

    for call_event_id, tool_call_id, tool_name in hidden_pending:
        out.append(
            Diagnostic(
                code="pending_tool_result",
                message="hidden nested tool call has no committed result; outcome unknown",
                event_id=call_event_id,
                tool_call_id=tool_call_id,
                tool_name=tool_name,
            )
        )

    by_call_id = {operation.tool_call_id: operation for operation in operations}
    for event in events:
        response = event.function_response
        if event.partial or event.is_hidden or response is None:
            continue
        matched = by_call_id.get(response.id)
        if matched is None:
            out.append(
                Diagnostic(
                    code="unmatched_tool_result",
                    message="tool result has no earlier matching tool call",
                    event_id=event.id,
                    tool_call_id=response.id,
                    tool_name=response.name,
                )
            )
        elif matched.tool_name != response.name:
            out.append(
                Diagnostic(
                    code="tool_name_mismatch",
                    message="tool result names a different tool than its call",
                    event_id=event.id,
                    tool_call_id=response.id,
                    tool_name=response.name,
                    detail={"callToolName": matched.tool_name, "responseToolName": response.name},
                )
            )
    return out


def _rejection_reasons(diagnostics: Sequence[Diagnostic]) -> tuple[ResumeRejectionReason, ...]:
    reasons: dict[ResumeRejectionReason, None] = {}
    for diagnostic in diagnostics:
        if diagnostic.code == "runtime_offset_mismatch":
            reasons.setdefault("runtime_offset_mismatch")
        elif diagnostic.code in _DANGLING_CODES:
            reasons.setdefault("dangling_tool_state")
    return tuple(reasons)


def build_resume_plan(
    events: Sequence[RuntimeEventInput], expected_high_water: int | None = None
) -> ResumePlan:
    """Decide whether a committed prefix may be replayed to the provider (spec §3.2-3.6).

    ``events`` is everything the store returned for one run, partial snapshots included: the
    high-water is the input count. ``expected_high_water`` (e.g. a checkpoint's) that differs
    from it is always ``runtime_offset_mismatch``. Deterministic; never mutates its input.
    """
    decoded = decode_events(events)
    resolution = resolve_tool_operations(decoded)
    operations = _operations(decoded, resolution)
    hidden_pending = _hidden_indeterminate_call_ids(decoded, resolution)
    diagnostics = _diagnostics(decoded, operations, resolution, hidden_pending, expected_high_water)
    rejection_reasons = _rejection_reasons(diagnostics)
    # a pending hidden nested call is still a possible side effect of the enclosing execution
    requires_verification = bool(hidden_pending) or any(
        operation.status == "indeterminate" for operation in operations
    )
    disposition: ResumeDisposition = (
        "safe_replay"
        if not rejection_reasons and not requires_verification and not resolution.has_corruption
        else "blocked"
    )
    return ResumePlan(
        disposition=disposition,
        operations=operations,
        diagnostics=tuple(diagnostics),
        rejection_reasons=rejection_reasons,
        requires_verification=requires_verification,
        source_runtime_event_high_water=len(decoded),
        directive=RESUME_DIRECTIVE if requires_verification else None,
        runtime_events=decoded,
        replay_runtime_events=tuple(provider_replay_subset(decoded)),
    )
