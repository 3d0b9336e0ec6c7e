"""Phase 0 crash contract: a pure ``ResumePlan`` over a committed RuntimeEvent prefix.

The contract is docs/reference/phase0.md.

Why fail closed: after a crash the only evidence is the committed prefix. Any tool call whose
outcome is not a committed result (or whose facts contradict each other) may have changed the
world; replaying the run as if it had not would risk running it twice. The plan therefore only
says ``safe_replay`` when every visible operation is settled, no hidden nested operation is
pending, and the resolver found no corruption. It runs nothing and mutates nothing: same input,
deep-equal plan. The diagnostics that explain a ``blocked`` plan, and the rejection reasons they
imply, are built in ``maka_es.resume.plan``.

Provider replay subset of a committed prefix (docs/reference/phase0.md#replay-subset).

Why a subset and not the whole ledger: the provider must never see half of a tool exchange. A
call without a committed, same-named result is exactly the interrupted suffix whose side effects
are unknown; replaying it would invite the model to act on (or repeat) it. Events without content
(terminal, permission, dispatch and recovery facts, continuation starts) stay: they are canonical
facts that the model-history projection ignores, and dropping them would make the replay list
disagree with the ledger about where the run ended.

The diagnostics of a ResumePlan, in their fixed emission order, and the reasons they imply.

Why a module of its own: the plan (``maka_es.resume.plan``) decides *whether* a prefix may be
replayed; this module says *why not*, in words a host can act on. The order of the diagnostics
is part of the contract (docs/reference/phase0.md#diagnostics), so each numbered step of that
table is one function here and :func:`resume_diagnostics` runs them in table order. Which codes
make a prefix unsafe is docs/reference/phase0.md#rejection-reasons. Pure, like the plan.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import get_args

from maka_es.resume.models import (
    DecisionStatus,
    Diagnostic,
    DiagnosticCode,
    DiagnosticOnlyCode,
    Resolution,
    ResumeDisposition,
    ResumePlan,
    ResumeRejectionReason,
    RuntimeEventInput,
    ToolOperation,
    ToolOperationStatus,
    decode_events,
)
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.resolver import built_model, resolve_tool_operations
from maka_es.wire.events import FunctionCallContent, FunctionResponseContent, RuntimeEvent

__all__ = [
    "GrowingReplay",
    "HiddenPendingCall",
    "RESUME_DIRECTIVE",
    "attestation_diagnostics",
    "build_resume_plan",
    "paired_call_ids",
    "plan_over_resolution",
    "project_tool_operations",
    "provider_replay_subset",
    "rejection_reasons",
    "resume_diagnostics",
    "resume_verdict",
    "tracked_resume_verdict",
]


def paired_call_ids(events: Sequence[RuntimeEvent]) -> frozenset[str]:
    """Provider call ids with an earlier non-partial call and a later same-named response.

    Pairing keys on the bare provider id (not the invocation), as the provider sees it; the
    latest earlier call with that id is the one a response is matched against.
    """
    calls: dict[str, FunctionCallContent] = {}
    paired: set[str] = set()
    for event in events:
        if event.partial:
            continue
        content = event.content
        if isinstance(content, FunctionCallContent):
            calls[content.id] = content
        elif isinstance(content, FunctionResponseContent):
            earlier = calls.get(content.id)
            if earlier is not None and earlier.name == content.name:
                paired.add(content.id)
    return frozenset(paired)


def provider_replay_subset(events: Sequence[RuntimeEventInput]) -> list[RuntimeEvent]:
    """The legal provider-replay subset of ``events``, in ledger order.

    Drops partial and hidden events, and calls/responses whose id is not paired; keeps every
    content-less fact and every other content event (text, thinking, error).
    """
    decoded = decode_events(events)
    paired = paired_call_ids(decoded)
    subset: list[RuntimeEvent] = []
    for event in decoded:
        if event.partial or event.model_visibility == "hidden":
            continue
        content = event.content
        if isinstance(content, FunctionCallContent | FunctionResponseContent):
            if content.id in paired:
                subset.append(event)
        else:
            subset.append(event)
    return subset


class GrowingReplay:
    """``provider_replay_subset`` of a ledger that only grows, extended by its new events.

    Why: the agent loop asks for its run's replay before every provider call; projecting every
    event again made a turn quadratic in its steps (issue 23, target 4). Pairing only ever adds
    ids, so the subset of the whole is the subset of the prefix plus the tail's, unless the
    tail pairs an id an earlier visible call or response carries: then that earlier event joins
    and the subset is projected again from every event held (the plain function, ADR 0046).
    """

    def __init__(self) -> None:
        self._events: list[RuntimeEvent] = []
        self._calls: dict[str, FunctionCallContent] = {}  # the latest non-partial call per id
        self._paired: set[str] = set()
        self._held_ids: set[str] = set()  # ids of visible, complete calls and responses held
        self._subset: list[RuntimeEvent] = []
        self._subset_call_ids: set[str] = set()

    @property
    def count(self) -> int:
        """How many events of the ledger are held (the next read starts after them)."""
        return len(self._events)

    @property
    def subset(self) -> tuple[RuntimeEvent, ...]:
        """``provider_replay_subset`` of every event held."""
        return tuple(self._subset)

    @property
    def call_ids(self) -> frozenset[str]:
        """The ids of the function calls in :attr:`subset`."""
        return frozenset(self._subset_call_ids)

    def extend(self, events: Sequence[RuntimeEvent]) -> None:
        """Hold ``events``, the ledger's events after the ones held, in ledger order."""
        newly_paired = [call_id for call_id in self._pair(events) if call_id in self._held_ids]
        self._events.extend(events)
        for event in events:
            content = event.content
            visible = not event.partial and event.model_visibility != "hidden"
            if visible and isinstance(content, FunctionCallContent | FunctionResponseContent):
                self._held_ids.add(content.id)
        if newly_paired:
            self._subset = provider_replay_subset(self._events)
            self._subset_call_ids = set()
            self._note_calls(self._subset)
            return
        tail = self._visible(events)
        self._subset.extend(tail)
        self._note_calls(tail)

    def _pair(self, events: Sequence[RuntimeEvent]) -> list[str]:
        """``paired_call_ids``' fold over ``events``; the ids it pairs for the first time."""
        newly: list[str] = []
        for event in events:
            if event.partial:
                continue
            content = event.content
            if isinstance(content, FunctionCallContent):
                self._calls[content.id] = content
            elif isinstance(content, FunctionResponseContent):
                earlier = self._calls.get(content.id)
                paired = earlier is not None and earlier.name == content.name
                if paired and content.id not in self._paired:
                    self._paired.add(content.id)
                    newly.append(content.id)
        return newly

    def _visible(self, events: Sequence[RuntimeEvent]) -> list[RuntimeEvent]:
        """``provider_replay_subset``'s filter, with the pairs of every event held."""
        kept: list[RuntimeEvent] = []
        for event in events:
            if event.partial or event.model_visibility == "hidden":
                continue
            content = event.content
            if isinstance(content, FunctionCallContent | FunctionResponseContent):
                if content.id in self._paired:
                    kept.append(event)
            else:
                kept.append(event)
        return kept

    def _note_calls(self, events: Sequence[RuntimeEvent]) -> None:
        for event in events:
            if event.function_call is not None:
                self._subset_call_ids.add(event.function_call.id)


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
    with cyclic_gc_paused():
        decoded = decode_events(events)
        return plan_over_resolution(
            decoded, resolve_tool_operations(decoded), expected_high_water, attestations
        )


_GC_LOCK = threading.Lock()
#: Builds in progress that paused the cyclic collector, and whether it ran before the first.
_GC_PAUSE = {"depth": 0, "was_enabled": 0}


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic collector for one bulk build, then restore it as it was (ADR 0037).

    Why: a plan allocates a few containers per event and frees none of them until it ends, so
    each full collection walks every event already built; at 100k events that made the plan
    superlinear. The build makes no garbage that needs the collector to be correct (reference
    counting still frees everything acyclic), so pausing it only delays cyclic garbage to the
    end of the build. Nested or concurrent builds share one pause; the last one out restores
    the collector's state from before the first, also when the build raises.
    """
    with _GC_LOCK:
        if _GC_PAUSE["depth"] == 0:
            _GC_PAUSE["was_enabled"] = int(gc.isenabled())
            gc.disable()
        _GC_PAUSE["depth"] += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSE["depth"] -= 1
            if _GC_PAUSE["depth"] == 0 and _GC_PAUSE["was_enabled"]:
                gc.enable()


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
    return trusted_resume_plan(
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


def trusted_resume_plan(
    *,
    disposition: ResumeDisposition,
    operations: tuple[ToolOperation, ...],
    diagnostics: tuple[Diagnostic, ...],
    rejection_reasons: tuple[ResumeRejectionReason, ...],
    requires_verification: bool,
    source_runtime_event_high_water: int,
    directive: str | None,
    runtime_events: tuple[RuntimeEvent, ...],
    replay_runtime_events: tuple[RuntimeEvent, ...],
) -> ResumePlan:
    """The plan with these fields, built without validation (ADR 0037, amended 2026-12-02).

    Why trusted: every value is already typed by the code above (literals of the decision
    table, ``tuple`` of validated ``ToolOperation``, ``Diagnostic`` and ``RuntimeEvent``
    instances, a ``bool``, an ``int``, a ``str`` or ``None``). Validating the plan walked every
    event twice again (``runtime_events`` and ``replay_runtime_events``) only to keep each
    instance as it was. The instance is what validation builds: the same ``__dict__`` in field
    order, every field set, no extra, no private (tests/unit/resume/test_plan_fast_paths.py).
    """
    fields = {
        "disposition": disposition,
        "operations": operations,
        "diagnostics": diagnostics,
        "rejection_reasons": rejection_reasons,
        "requires_verification": requires_verification,
        "source_runtime_event_high_water": source_runtime_event_high_water,
        "directive": directive,
        "runtime_events": runtime_events,
        "replay_runtime_events": replay_runtime_events,
    }
    return built_model(ResumePlan, {name: fields[name] for name in _PLAN_FIELDS})


#: Every field of a plan, in declaration order: ``plan_over_resolution`` passes them all.
_PLAN_FIELDS = tuple(ResumePlan.model_fields)


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
