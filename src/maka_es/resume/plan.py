"""Phase 0 crash contract: a pure ``ResumePlan`` over a committed RuntimeEvent prefix.

The contract is docs/reference/phase0.md.

Why fail closed: after a crash the only evidence is the committed prefix. Any tool call whose
outcome is not a committed result (or whose facts contradict each other) may have changed the
world; replaying the run as if it had not would risk running it twice. The plan therefore only
says ``safe_replay`` when every visible operation is settled, no hidden nested operation is
pending, and the resolver found no corruption. It runs nothing and mutates nothing: same input,
deep-equal plan. The diagnostics that explain a ``blocked`` plan, and the rejection reasons they
imply, are built in ``maka_es.resume.diagnostics``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from maka_es.resume.diagnostics import (
    HiddenPendingCall,
    attestation_diagnostics,
    rejection_reasons,
    resume_diagnostics,
)
from maka_es.resume.models import (
    DecisionStatus,
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
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.resolver import resolve_tool_operations
from maka_es.wire.events import FunctionCallContent, RuntimeEvent

__all__ = [
    "RESUME_DIRECTIVE",
    "build_resume_plan",
    "plan_over_resolution",
    "project_tool_operations",
    "resume_verdict",
    "tracked_resume_verdict",
]

#: Instruction handed to the model whenever a tool outcome is unknown (exact text,
#: docs/reference/phase0.md#directive).
RESUME_DIRECTIVE = (
    "Tool execution was interrupted before a matching committed tool result was found. "
    "The side effects may or may not have occurred. "
    "Do not retry the tool call immediately. "
    "Use read-only inspection tools to verify the current state before deciding the next step."
)

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
        content = event.content
        if isinstance(content, FunctionCallContent) and event.model_visibility != "hidden":
            calls[event.id] = content
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
                args=call.args,  # validation copies JSON containers: never the event's own
                status=status,
                call_runtime_event_id=decision.call_runtime_event_id,
                response_runtime_event_id=decision.response_runtime_event_id,
                response_is_error=decision.response_is_error,
            )
        )
    return tuple(operations)


def project_tool_operations(events: Sequence[RuntimeEventInput]) -> tuple[ToolOperation, ...]:
    """The model-facing tool operations of a prefix, in scanner order
    (docs/reference/phase0.md#tool-operation)."""
    decoded = decode_events(events)
    return _operations(decoded, resolve_tool_operations(decoded))


def _hidden_indeterminate_call_ids(
    events: Sequence[RuntimeEvent], resolution: Resolution
) -> list[HiddenPendingCall]:
    """``(callEventId, toolCallId, toolName)`` of indeterminate decisions whose call is hidden."""
    indeterminate = [
        (call_id, decision)
        for decision in resolution.decisions
        if decision.status == "indeterminate"
        and (call_id := decision.call_runtime_event_id) is not None
    ]
    if not indeterminate:
        return []  # the common case: no index of every event to build
    by_id = {event.id: event for event in events}
    pending: list[HiddenPendingCall] = []
    for call_id, decision in indeterminate:
        call_event = by_id.get(call_id)
        if call_event is not None and call_event.is_hidden:
            pending.append((call_id, decision.tool_call_id, decision.tool_name))
    return pending


def build_resume_plan(
    events: Sequence[RuntimeEventInput],
    expected_high_water: int | None = None,
    attestations: Sequence[OperatorAttestation] = (),
) -> ResumePlan:
    """Decide whether a committed prefix may be replayed to the provider
    (docs/reference/phase0.md#resume-plan).

    ``events`` is everything the store returned for one run, partial snapshots included: the
    high-water is the input count. ``expected_high_water`` (e.g. a checkpoint's) that differs
    from it is always ``runtime_offset_mismatch``. ``attestations`` (the run's operator
    attestations, ADR 0022) add ``operator_attested`` diagnostics after the others; they never
    change the disposition. Deterministic; never mutates its input.
    """
    decoded = decode_events(events)
    return plan_over_resolution(
        decoded, resolve_tool_operations(decoded), expected_high_water, attestations
    )


def plan_over_resolution(
    decoded: tuple[RuntimeEvent, ...],
    resolution: Resolution,
    expected_high_water: int | None = None,
    attestations: Sequence[OperatorAttestation] = (),
) -> ResumePlan:
    """:func:`build_resume_plan` over a resolution already folded from exactly ``decoded``.

    Why: the Run aggregate keeps the RecoveryResolver's fold of its committed events
    incrementally, so the store's ``plan_resume`` hands that resolution over instead of
    scanning the run a second time (ADR 0025). Same events, same resolver: same plan.
    """
    operations = _operations(decoded, resolution)
    hidden_pending = _hidden_indeterminate_call_ids(decoded, resolution)
    diagnostics = resume_diagnostics(
        decoded, operations, resolution, hidden_pending, expected_high_water
    )
    diagnostics.extend(attestation_diagnostics(operations, attestations))
    reasons = rejection_reasons(diagnostics)
    requires_verification = _requires_verification(operations, hidden_pending)
    disposition = _disposition(reasons, requires_verification, resolution)
    return ResumePlan(
        disposition=disposition,
        operations=operations,
        diagnostics=tuple(diagnostics),
        rejection_reasons=reasons,
        requires_verification=requires_verification,
        source_runtime_event_high_water=len(decoded),
        directive=RESUME_DIRECTIVE if requires_verification else None,
        runtime_events=decoded,
        replay_runtime_events=tuple(provider_replay_subset(decoded)),
    )


def resume_verdict(
    events: Sequence[RuntimeEvent], resolution: Resolution
) -> tuple[ResumeDisposition, tuple[ResumeRejectionReason, ...]]:
    """``(disposition, rejection_reasons)`` of ``build_resume_plan(events)``, from the
    resolution the caller already holds.

    Why: a Run aggregate keeps the resolver's fold incrementally (``Run.resolution()``), so the
    recovery-status read model can judge a run without re-resolving its whole ledger and without
    the plan's copies of every event (docs/reference/phase0.md#resume-plan; ADR 0012).
    ``resolution`` must be the resolution of exactly ``events``; the same private steps as
    :func:`build_resume_plan` decide, so the verdict cannot drift from the plan's.
    """
    operations = _operations(events, resolution)
    hidden_pending = _hidden_indeterminate_call_ids(events, resolution)
    reasons = rejection_reasons(
        resume_diagnostics(events, operations, resolution, hidden_pending, None)
    )
    requires_verification = _requires_verification(operations, hidden_pending)
    return _disposition(reasons, requires_verification, resolution), reasons


def tracked_resume_verdict(
    resolution: Resolution, read_events: Callable[[], Sequence[RuntimeEvent]]
) -> tuple[ResumeDisposition, tuple[ResumeRejectionReason, ...]]:
    """:func:`resume_verdict`, calling ``read_events`` only when the resolution alone does not
    decide the verdict.

    Why: the recovery-status read model judges a run restored from a snapshot, whose events
    are read from the ledger on first use (ADR 0032); reading a long run whole to learn that it
    has a pending call made catching it up cost its whole history. Without an expected
    high-water the only possible reason is ``dangling_tool_state``, and it is certain, with no
    event read, when the resolution has (ADR 0012, docs/reference/phase0.md#diagnostics):

    - a resolver issue: step 3 reports each one under a code that maps to it;
    - an indeterminate decision with a call: its call event is a function call, visible (step
      2, ``pending_tool_result``) or hidden (step 5);
    - a corrupt decision without a call that is not an orphan response (step 4).

    Then ``requires_verification`` and corruption change nothing: the plan is ``blocked``. A
    resolution with no decision and no issue scanned no tool event at all (every non-partial
    function response becomes an operation or an issue), so no step reports anything and the
    plan is ``safe_replay``. Every other resolution is judged over the events, exactly as
    :func:`resume_verdict` does.
    """
    if _certainly_dangling(resolution):
        return "blocked", ("dangling_tool_state",)
    if not resolution.decisions and not resolution.issues:
        return "safe_replay", ()
    return resume_verdict(read_events(), resolution)


def _certainly_dangling(resolution: Resolution) -> bool:
    if resolution.issues:
        return True
    return any(
        (decision.status == "indeterminate" and decision.call_runtime_event_id is not None)
        or (
            decision.status == "corruption"
            and decision.call_runtime_event_id is None
            and decision.reason != "orphan_response"
        )
        for decision in resolution.decisions
    )


def _requires_verification(
    operations: Sequence[ToolOperation], hidden_pending: Sequence[HiddenPendingCall]
) -> bool:
    """A pending hidden nested call is still a possible side effect of the enclosing
    execution, like an indeterminate visible operation."""
    return bool(hidden_pending) or any(
        operation.status == "indeterminate" for operation in operations
    )


def _disposition(
    reasons: Sequence[ResumeRejectionReason], requires_verification: bool, resolution: Resolution
) -> ResumeDisposition:
    """``safe_replay`` only when nothing blocks, nothing needs verifying and nothing is corrupt."""
    if not reasons and not requires_verification and not resolution.has_corruption:
        return "safe_replay"
    return "blocked"
