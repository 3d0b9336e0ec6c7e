"""The diagnostics of a ResumePlan, in their fixed emission order, and the reasons they imply.

Why a module of its own: the plan (``maka_es.resume.plan``) decides *whether* a prefix may be
replayed; this module says *why not*, in words a host can act on. The order of the diagnostics
is part of the contract (docs/reference/phase0.md#diagnostics), so each numbered step of that
table is one function here and :func:`resume_diagnostics` runs them in table order. Which codes
make a prefix unsafe is docs/reference/phase0.md#rejection-reasons. Pure, like the plan.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import get_args

from maka_es.resume.models import (
    Diagnostic,
    DiagnosticCode,
    DiagnosticOnlyCode,
    Resolution,
    ResumeRejectionReason,
    ToolOperation,
)
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.wire.events import FunctionResponseContent, RuntimeEvent

__all__ = [
    "HiddenPendingCall",
    "attestation_diagnostics",
    "rejection_reasons",
    "resume_diagnostics",
]

#: ``(callEventId, toolCallId, toolName)`` of a hidden nested call with an indeterminate outcome.
HiddenPendingCall = tuple[str, str, str | None]

#: Resolver issues that keep their own diagnostic code; every other one is tool_ledger_corruption.
_SELF_NAMED_ISSUES = frozenset(
    {"protocol_marker_invalid", "duplicate_event_id", "semantic_lane_conflict"}
)

#: Diagnostics that make a prefix unsafe to replay (all map to ``dangling_tool_state``): every
#: diagnostic-only code but the cwd note, which never blocks a replay.
_DANGLING_CODES = frozenset(get_args(DiagnosticOnlyCode)) - {
    "workspace_location_changed",
    "operator_attested",
}

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


def resume_diagnostics(
    events: Sequence[RuntimeEvent],
    operations: Sequence[ToolOperation],
    resolution: Resolution,
    hidden_pending: Sequence[HiddenPendingCall],
    expected_high_water: int | None,
) -> list[Diagnostic]:
    """All diagnostics in the emission order of docs/reference/phase0.md#diagnostics."""
    return [
        *_high_water_mismatch(len(events), expected_high_water),
        *_unsettled_operations(operations),
        *_resolver_issues(resolution),
        *_call_less_corruption(resolution),
        *_hidden_pending_calls(hidden_pending),
        *_unmatched_results(events, operations),
    ]


def rejection_reasons(diagnostics: Sequence[Diagnostic]) -> tuple[ResumeRejectionReason, ...]:
    """The distinct rejection reasons the diagnostics imply, in first-appearance order."""
    reasons: dict[ResumeRejectionReason, None] = {}
    for diagnostic in diagnostics:
        if diagnostic.code == "runtime_offset_mismatch":
            reasons.setdefault("runtime_offset_mismatch")
        elif diagnostic.code in _DANGLING_CODES:
            reasons.setdefault("dangling_tool_state")
    return tuple(reasons)


def _high_water_mismatch(actual: int, expected: int | None) -> Iterator[Diagnostic]:
    """Step 1: the caller expected another high-water (e.g. a checkpoint's)."""
    if expected is not None and expected != actual:
        yield Diagnostic(
            code="runtime_offset_mismatch",
            message="committed high-water differs from the expected high-water",
            detail={
                "expectedRuntimeEventHighWater": expected,
                "actualRuntimeEventHighWater": actual,
            },
        )


def _unsettled_operations(operations: Sequence[ToolOperation]) -> Iterator[Diagnostic]:
    """Step 2: every model-facing operation that did not settle, in scanner order."""
    for operation in operations:
        if operation.status in _OPERATION_DIAGNOSTICS:
            code, message = _OPERATION_DIAGNOSTICS[operation.status]
            yield Diagnostic(
                code=code,
                message=message,
                event_id=operation.call_runtime_event_id,
                tool_call_id=operation.tool_call_id,
                tool_name=operation.tool_name,
            )


def _resolver_issues(resolution: Resolution) -> Iterator[Diagnostic]:
    """Step 3: every resolver issue; three keep their own code, the rest are corruption."""
    for issue in resolution.issues:
        if issue.code in _SELF_NAMED_ISSUES:
            yield Diagnostic(
                code=issue.code,
                message=_ISSUE_MESSAGES[issue.code],
                event_id=issue.event_id,
            )
        else:
            yield Diagnostic(
                code="tool_ledger_corruption",
                message=f"immutable tool ledger is corrupt: {issue.code}",
                event_id=issue.event_id,
                detail={"issueCode": issue.code},
            )


def _call_less_corruption(resolution: Resolution) -> Iterator[Diagnostic]:
    """Step 4: corrupt decisions without a call, except an orphan response (step 6 reports it
    as an unmatched result, and it must not be reported twice)."""
    for decision in resolution.decisions:
        if (
            decision.status != "corruption"
            or decision.call_runtime_event_id is not None
            or decision.reason == "orphan_response"
        ):
            continue
        yield Diagnostic(
            code="tool_recovery_corruption",
            message=f"tool fact has no function call: {decision.reason}",
            event_id=decision.dispatch_runtime_event_id or decision.response_runtime_event_id,
            tool_call_id=decision.tool_call_id,
            tool_name=decision.tool_name,
        )


def _hidden_pending_calls(hidden_pending: Sequence[HiddenPendingCall]) -> Iterator[Diagnostic]:
    """Step 5: hidden nested calls with no outcome are still possible side effects."""
    for call_event_id, tool_call_id, tool_name in hidden_pending:
        yield Diagnostic(
            code="pending_tool_result",
            message="hidden nested tool call has no committed result; outcome unknown",
            event_id=call_event_id,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
        )


def _unmatched_results(
    events: Sequence[RuntimeEvent], operations: Sequence[ToolOperation]
) -> Iterator[Diagnostic]:
    """Step 6: committed visible results with no matching call, or naming another tool."""
    by_call_id = {operation.tool_call_id: operation for operation in operations}
    for event in events:
        response = event.content
        if (
            not isinstance(response, FunctionResponseContent)
            or event.partial
            or event.model_visibility == "hidden"
        ):
            continue
        matched = by_call_id.get(response.id)
        if matched is None:
            yield Diagnostic(
                code="unmatched_tool_result",
                message="tool result has no earlier matching tool call",
                event_id=event.id,
                tool_call_id=response.id,
                tool_name=response.name,
            )
        elif matched.tool_name != response.name:
            yield Diagnostic(
                code="tool_name_mismatch",
                message="tool result names a different tool than its call",
                event_id=event.id,
                tool_call_id=response.id,
                tool_name=response.name,
                detail={"callToolName": matched.tool_name, "responseToolName": response.name},
            )


def attestation_diagnostics(
    operations: Sequence[ToolOperation], attestations: Sequence[OperatorAttestation]
) -> Iterator[Diagnostic]:
    """``operator_attested`` for every operation settled by an operator's attestation (ADR
    0022), after the table's diagnostics: provenance, never a reason to block. Only attestations
    whose response is in the planned prefix are reported."""
    by_response = {a.response_event_id: a for a in attestations}
    for operation in operations:
        attestation = by_response.get(operation.response_runtime_event_id or "")
        if attestation is None:
            continue
        outcome = "applied" if attestation.applied else "not applied"
        yield Diagnostic(
            code="operator_attested",
            message=f"outcome attested as {outcome} by an operator",
            event_id=attestation.response_event_id,
            tool_call_id=operation.tool_call_id,
            tool_name=operation.tool_name,
            detail=attestation.to_detail(),
        )
