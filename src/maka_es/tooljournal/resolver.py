"""RecoveryResolver: the single authority that classifies tool operations after a crash (spec §5.3).

Why one scanner: the online projection, a rebuild from events and the resume planner must never
disagree about whether a tool may have run. They all consume the same physical-order scan of the
immutable ledger, and recovery bundles (spec §5.4) are interpreted by one function here.

Why an incremental fold: a run aggregate validates every tool-bearing append against the ledger
it already holds. Rescanning the whole run per append is O(history); ``ResolverState`` instead
keeps the scanner's maps and updates them in O(1) amortised per event (plus hashing the call
arguments once, when a dispatch binds a call). ``resolve_tool_operations`` is simply the fold
over all events followed by ``ResolverState.resolution()``.

Prospective checks are *observationally pure*: ``ResolverState.issues_if_fed`` and
``would_introduce_issue`` run the very same step code with an undo journal and roll the state
back before returning (also on error). The state is therefore never copied (copying would be
O(history)); the price is that one state object must not be used from several threads at once.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from maka_es.tooljournal.resolution import (
    DecisionReason,
    DecisionStatus,
    Resolution,
    ResolverIssue,
    ResolverIssueCode,
    SettlementOrigin,
    ToolBoundaryProtocol,
    ToolDecision,
)
from maka_es.wire.codec import canonical_args_hash
from maka_es.wire.events import (
    TOOL_BOUNDARY_PROTOCOL_V1,
    CompletedDecisionPayload,
    ParkedDecisionPayload,
    ReconcileResultPayload,
    RuntimeEvent,
)
from maka_es.wire.lanes import classify_lane
from maka_es.wire.report import RuntimeEventInput, decode_events

__all__ = [
    "BundleInterpretation",
    "OPERATION_ISSUE_PRIORITY",
    "ResolverState",
    "resolve_tool_operations",
    "would_introduce_issue",
]

#: Scanner issue codes that are also decision reasons (an operation's own defects).
OperationIssueCode = Literal[
    "duplicate_call",
    "duplicate_operation",
    "duplicate_dispatch",
    "duplicate_response",
    "orphan_response",
    "canonical_args_hash_conflict",
    "identity_conflict",
    "event_order_conflict",
]
ParkedReason = Literal[
    "reconcile_matches_prior_state", "reconcile_diverged", "reconcile_unreadable"
]

_K = TypeVar("_K")
_T = TypeVar("_T")
_V = TypeVar("_V")

#: When an operation carries several defects, its decision reason is the first of these it has.
OPERATION_ISSUE_PRIORITY: tuple[OperationIssueCode, ...] = (
    "duplicate_call",
    "duplicate_operation",
    "duplicate_dispatch",
    "duplicate_response",
    "orphan_response",
    "canonical_args_hash_conflict",
    "identity_conflict",
    "event_order_conflict",
)

_PARKED_REASON_FOR_OBSERVATION: dict[str, ParkedReason] = {
    "matches_prior_state": "reconcile_matches_prior_state",
    "diverged": "reconcile_diverged",
    "unreadable": "reconcile_unreadable",
}

_PARKED_REASONS: dict[str, ParkedReason] = {
    reason: reason for reason in _PARKED_REASON_FOR_OBSERVATION.values()
}

BundleCode = Literal[
    "recovery_fact_shape_conflict",
    "event_order_conflict",
    "call_identity_conflict",
    "canonical_args_hash_conflict",
    "dispatch_identity_conflict",
    "recovery_mode_unsupported",
    "reconcile_fact_invalid",
    "decision_fact_invalid",
    "recovery_fact_identity_conflict",
    "operation_identity_conflict",
    "outcome_required",
    "outcome_identity_conflict",
    "outcome_not_successful",
    "outcome_reference_conflict",
    "reconcile_decision_conflict",
    "outcome_for_parked",
    "evidence_order_conflict",
]


@dataclass(slots=True, eq=False)
class _Operation:
    """Scanner bookkeeping for one provider call key ``(invocationId, providerToolCallId)``.

    Mutable and private: only ``ResolverState`` touches it, always through the journal helpers.
    """

    tool_call_id: str
    tool_name: str | None
    operation_id: str | None = None
    call_event: RuntimeEvent | None = None
    dispatch_event: RuntimeEvent | None = None
    response_event: RuntimeEvent | None = None
    reconcile_events: list[RuntimeEvent] = field(default_factory=list)
    decision_events: list[RuntimeEvent] = field(default_factory=list)
    issue_codes: list[ResolverIssueCode] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class BundleInterpretation:
    """Read-side reading of one operation's recovery facts (spec §5.4).

    ``kind`` is ``absent`` (no recovery facts), ``valid`` (then ``disposition`` and
    ``reason_code`` come from the decision) or ``corruption`` (then ``code`` says why).
    """

    kind: Literal["absent", "valid", "corruption"]
    code: BundleCode | None = None
    disposition: Literal["completed", "parked"] | None = None
    reason_code: Literal["reconcile_matches_expected_state"] | ParkedReason | None = None


_ABSENT = BundleInterpretation("absent")


def _corrupt(code: BundleCode) -> BundleInterpretation:
    return BundleInterpretation("corruption", code=code)


def _same_execution(first: RuntimeEvent | None, second: RuntimeEvent) -> bool:
    return first is not None and first.identity == second.identity


def _hash_or_none(tool_name: str, args: Any) -> str | None:
    """The canonical args hash, or ``None`` when the args cannot authenticate a T1 fact."""
    try:
        return canonical_args_hash(tool_name, args)
    except (ValueError, TypeError, RecursionError):  # NonStrictJsonError is a ValueError
        return None


class ResolverState:
    """Incremental RecoveryResolver scanner: ``feed`` events in physical order, then
    ``resolution()``.

    Feeding never mutates the events. ``resolution()`` is O(operations) and does not change the
    state, so it may be called after every event. See the module docstring for the purity
    contract of the prospective checks.
    """

    __slots__ = (
        "_by_call",
        "_by_operation",
        "_count",
        "_marker_issues",
        "_operations",
        "_positions",
        "_protocol",
        "_scanner_issues",
        "_seen_ids",
        "_spines",
        "_undo",
    )

    def __init__(self) -> None:
        self._count = 0
        self._protocol: ToolBoundaryProtocol | None = None
        self._marker_issues: list[ResolverIssue] = []
        self._scanner_issues: list[ResolverIssue] = []
        # dict used as an ordered set so that the journal helpers cover it too
        self._seen_ids: dict[str, None] = {}
        # last physical index of every event id (duplicates included), for bundle order checks
        self._positions: dict[str, int] = {}
        self._spines: dict[str, tuple[str, str, str]] = {}
        self._operations: list[_Operation] = []
        self._by_call: dict[tuple[str, str], _Operation] = {}
        self._by_operation: dict[str, _Operation] = {}
        self._undo: list[Callable[[], None]] | None = None

    # -- public API ----------------------------------------------------------------------------

    @property
    def event_count(self) -> int:
        """Number of events folded so far (duplicates and partials included)."""
        return self._count

    @property
    def tool_boundary_protocol(self) -> ToolBoundaryProtocol | None:
        """``t1_after_preflight_v1`` iff the first event declared it; else legacy (``None``)."""
        return self._protocol

    @property
    def issues(self) -> tuple[ResolverIssue, ...]:
        """Ledger issues so far: protocol-marker issues first, then scanner issues."""
        return (*self._marker_issues, *self._scanner_issues)

    @property
    def has_issues(self) -> bool:
        return bool(self._marker_issues or self._scanner_issues)

    def feed(self, event: RuntimeEventInput) -> tuple[ResolverIssue, ...]:
        """Fold one event into the state; return the issues it introduced (in report order)."""
        (decoded,) = decode_events((event,))
        if self._undo is not None:
            raise RuntimeError("ResolverState is inside a prospective check")
        return self._step(decoded)

    def feed_all(self, events: Iterable[RuntimeEventInput]) -> tuple[ResolverIssue, ...]:
        """Fold several events; return every issue they introduced."""
        introduced: list[ResolverIssue] = []
        for event in events:
            introduced.extend(self.feed(event))
        return tuple(introduced)

    def issues_if_fed(self, events: Iterable[RuntimeEventInput]) -> tuple[ResolverIssue, ...]:
        """Issues that folding ``events`` (in order) would introduce; the state is unchanged.

        Runs the real step code under an undo journal and rolls back, so a multi-event
        transaction (T1 = call + dispatch, a recovery bundle) is judged exactly as a later
        ``feed_all`` would judge it. Bundle *shape* validity is decision-level, not an issue:
        use :meth:`prospect` with :meth:`bundle_interpretation` for it.
        """
        issues, _ = self.prospect(events, lambda state: None)
        return issues

    def prospect(
        self, events: Iterable[RuntimeEventInput], inspect: Callable[[ResolverState], _T]
    ) -> tuple[tuple[ResolverIssue, ...], _T]:
        """Fold ``events`` under the undo journal, call ``inspect`` on the resulting state, and
        roll back. The store uses it to judge a whole transaction (T1, T2, a recovery bundle)
        exactly as the committed ledger would later be judged, without copying the state."""
        decoded = decode_events(events)
        if self._undo is not None:
            raise RuntimeError("ResolverState prospective checks do not nest")
        journal: list[Callable[[], None]] = []
        self._undo = journal
        try:
            introduced: list[ResolverIssue] = []
            for event in decoded:
                introduced.extend(self._step(event))
            return tuple(introduced), inspect(self)
        finally:
            self._undo = None
            for undo in reversed(journal):
                undo()

    def bundle_interpretation(self, operation_id: str) -> BundleInterpretation | None:
        """How the recovery facts of ``operation_id`` read now (``None``: no such operation)."""
        operation = self._by_operation.get(operation_id)
        return None if operation is None else self._interpret_bundle(operation)

    def resolution(self) -> Resolution:
        """The resolver output for everything fed so far (spec §5.3)."""
        decisions = tuple(self._decide(operation) for operation in self._operations)
        issues = self.issues
        has_corruption = bool(issues) or any(d.status == "corruption" for d in decisions)
        return Resolution(
            decisions=decisions,
            issues=issues,
            has_corruption=has_corruption,
            requires_reconciliation=not has_corruption
            and any(d.status == "indeterminate" for d in decisions),
            tool_boundary_protocol=self._protocol,
        )

    def recovery_bundle_interpretations(self) -> dict[str, BundleInterpretation]:
        """Interpretation of the recovery facts of every operation that has some, keyed by
        operation id (facts only attach to operations bound by a dispatch). Shared by the
        resolver decisions and any projection rebuild, so both read bundles identically."""
        return {
            operation.operation_id: self._interpret_bundle(operation)
            for operation in self._operations
            if operation.operation_id is not None
            and (operation.reconcile_events or operation.decision_events)
        }

    # -- journalled mutation helpers -----------------------------------------------------------

    def _set(self, target: object, name: str, value: object) -> None:
        if self._undo is not None:
            previous = getattr(target, name)
            self._undo.append(lambda: setattr(target, name, previous))
        setattr(target, name, value)

    def _put(self, mapping: MutableMapping[_K, _V], key: _K, value: _V) -> None:
        if self._undo is not None:
            if key in mapping:
                previous = mapping[key]
                self._undo.append(lambda: mapping.__setitem__(key, previous))
            else:
                self._undo.append(lambda: mapping.__delitem__(key))
        mapping[key] = value

    def _append(self, items: list[_V], value: _V) -> None:
        if self._undo is not None:
            self._undo.append(lambda: items.__delitem__(-1))
        items.append(value)

    def _issue(
        self,
        introduced: list[ResolverIssue],
        code: ResolverIssueCode,
        event_id: str,
        *operations: _Operation,
    ) -> None:
        issue = ResolverIssue(code=code, event_id=event_id)
        self._append(self._scanner_issues, issue)
        for operation in operations:
            self._append(operation.issue_codes, code)
        introduced.append(issue)

    # -- the scanner step ----------------------------------------------------------------------

    def _step(self, event: RuntimeEvent) -> tuple[ResolverIssue, ...]:
        index = self._count
        self._set(self, "_count", index + 1)
        self._put(self._positions, event.id, index)
        markers = self._marker_step(event, index)
        scanned: list[ResolverIssue] = []
        self._scan(event, scanned)
        return (*markers, *scanned)

    def _marker_step(self, event: RuntimeEvent, index: int) -> list[ResolverIssue]:
        """Protocol marker: only the first event may declare it, and only the known value."""
        marker = event.protocol_marker
        if marker is None:
            return []
        if index == 0 and marker == TOOL_BOUNDARY_PROTOCOL_V1:
            self._set(self, "_protocol", TOOL_BOUNDARY_PROTOCOL_V1)
            return []
        issue = ResolverIssue(code="protocol_marker_invalid", event_id=event.id)
        self._append(self._marker_issues, issue)
        return [issue]

    def _scan(self, event: RuntimeEvent, out: list[ResolverIssue]) -> None:
        if event.id in self._seen_ids:
            self._issue(out, "duplicate_event_id", event.id)
            return
        self._put(self._seen_ids, event.id, None)

        spine = (event.session_id, event.run_id, event.turn_id)
        known_spine = self._spines.get(event.invocation_id)
        if known_spine is not None and known_spine != spine:
            self._issue(out, "invocation_identity_conflict", event.id)
        else:
            self._put(self._spines, event.invocation_id, spine)

        lane = classify_lane(event)
        if lane.is_conflict:
            self._issue(out, "semantic_lane_conflict", event.id)
            return
        if event.partial:
            return  # partial ordinary events never take part in tool analysis
        if lane.lane == "function_call":
            self._scan_call(event, out)
        elif lane.lane == "tool_dispatch":
            self._scan_dispatch(event, out)
        elif lane.lane == "function_response":
            self._scan_response(event, out)
        elif lane.lane in ("reconcile_result", "recovery_decision"):
            self._scan_recovery_fact(event, lane.lane == "reconcile_result", out)

    def _register(self, key: tuple[str, str], operation: _Operation) -> None:
        self._append(self._operations, operation)
        self._put(self._by_call, key, operation)

    def _scan_call(self, event: RuntimeEvent, out: list[ResolverIssue]) -> None:
        call = event.function_call
        assert call is not None
        key = (event.invocation_id, call.id)
        existing = self._by_call.get(key)
        if existing is None:
            self._register(key, _Operation(call.id, call.name, call_event=event))
            return
        if existing.call_event is not None:
            self._issue(out, "duplicate_call", event.id, existing)
            return
        # a dispatch or response arrived first; the call completes that operation
        self._set(existing, "call_event", event)
        if existing.tool_name != call.name:
            self._issue(out, "identity_conflict", event.id, existing)

    def _scan_dispatch(self, event: RuntimeEvent, out: list[ResolverIssue]) -> None:
        assert event.actions is not None
        dispatch = event.actions.tool_dispatch
        assert dispatch is not None
        key = (event.invocation_id, dispatch.provider_tool_call_id)
        operation = self._by_call.get(key)
        if operation is None:
            operation = _Operation(
                dispatch.provider_tool_call_id,
                dispatch.tool_name,
                operation_id=dispatch.operation_id,
                dispatch_event=event,
            )
            self._register(key, operation)
            self._issue(out, "event_order_conflict", event.id, operation)
        elif operation.dispatch_event is not None:
            self._issue(out, "duplicate_dispatch", event.id, operation)
            return

        bound = self._by_operation.get(dispatch.operation_id)
        if bound is not None and bound is not operation:
            self._issue(out, "duplicate_operation", event.id, bound, operation)
            return

        self._set(operation, "operation_id", dispatch.operation_id)
        self._set(operation, "dispatch_event", event)
        self._put(self._by_operation, dispatch.operation_id, operation)

        refs = event.refs
        if (
            operation.tool_name != dispatch.tool_name
            or refs is None
            or refs.operation_id != dispatch.operation_id
            or refs.tool_call_id != dispatch.provider_tool_call_id
            or (
                operation.call_event is not None
                and not _same_execution(operation.call_event, event)
            )
        ):
            self._issue(out, "identity_conflict", event.id, operation)

        call = operation.call_event.function_call if operation.call_event is not None else None
        if call is not None and _hash_or_none(call.name, call.args) != dispatch.canonical_args_hash:
            self._issue(out, "canonical_args_hash_conflict", event.id, operation)

        response = operation.response_event
        if response is not None:
            # the outcome was committed before T1: impossible order, and the earlier response
            # must now also be bound to this operation
            self._issue(out, "event_order_conflict", event.id, operation)
            response_refs = response.refs
            if (
                response_refs is None
                or response_refs.operation_id != dispatch.operation_id
                or response_refs.tool_call_id != dispatch.provider_tool_call_id
                or not _same_execution(event, response)
            ):
                self._issue(out, "identity_conflict", response.id, operation)

    def _scan_response(self, event: RuntimeEvent, out: list[ResolverIssue]) -> None:
        response = event.function_response
        assert response is not None
        key = (event.invocation_id, response.id)
        operation = self._by_call.get(key)
        if operation is None:
            orphan = _Operation(response.id, response.name, response_event=event)
            self._register(key, orphan)
            self._issue(out, "orphan_response", event.id, orphan)
            return
        if operation.response_event is not None:
            self._issue(out, "duplicate_response", event.id, operation)
            return
        self._set(operation, "response_event", event)
        refs = event.refs
        if (
            operation.tool_name != response.name
            or not _same_execution(operation.call_event, event)
            or (
                operation.operation_id is not None
                and (
                    refs is None
                    or refs.operation_id != operation.operation_id
                    or refs.tool_call_id != operation.tool_call_id
                )
            )
        ):
            self._issue(out, "identity_conflict", event.id, operation)

    def _scan_recovery_fact(
        self, event: RuntimeEvent, is_reconcile: bool, out: list[ResolverIssue]
    ) -> None:
        assert event.actions is not None
        fact = event.actions.tool_recovery
        assert fact is not None
        operation = self._by_operation.get(fact.payload.operation_id)
        if operation is None:
            # a recovery fact for an operation that never crossed T1 (or not yet): top-level
            self._issue(out, "event_order_conflict", event.id)
            return
        target = operation.reconcile_events if is_reconcile else operation.decision_events
        self._append(target, event)

    # -- decisions -----------------------------------------------------------------------------

    def _decide(self, operation: _Operation) -> ToolDecision:
        call, dispatch, response = (
            operation.call_event,
            operation.dispatch_event,
            operation.response_event,
        )
        response_content = response.function_response if response is not None else None

        def decision(
            status: DecisionStatus, reason: DecisionReason, origin: SettlementOrigin | None = None
        ) -> ToolDecision:
            return ToolDecision(
                tool_call_id=operation.tool_call_id,
                tool_name=operation.tool_name or None,
                operation_id=operation.operation_id or None,
                status=status,
                reason=reason,
                settlement_origin=origin,
                call_runtime_event_id=call.id if call is not None else None,
                dispatch_runtime_event_id=dispatch.id if dispatch is not None else None,
                response_runtime_event_id=response.id if response is not None else None,
                response_is_error=(
                    None
                    if response is None
                    else response_content is not None and response_content.is_error is True
                ),
            )

        if call is None and dispatch is not None:
            return decision("corruption", "orphan_dispatch")
        if call is None and response is not None:
            return decision("corruption", "orphan_response")
        for code in OPERATION_ISSUE_PRIORITY:
            if code in operation.issue_codes:
                return decision("corruption", code)

        status: DecisionStatus
        reason: DecisionReason
        origin: SettlementOrigin | None = None
        if response is not None:
            status, reason = "completed", "matching_response"
            origin = "normal_t2" if dispatch is not None else "pre_t1_synthetic"
        elif dispatch is not None:
            status, reason = "indeterminate", "dispatch_without_response"
        elif self._protocol is not None:
            status, reason = "definitely_not_dispatched", "new_protocol_before_dispatch"
        else:
            # absence of a dispatch fact proves nothing without the declared protocol
            status, reason = "indeterminate", "legacy_dispatch_unknown"

        interpretation = self._interpret_bundle(operation)
        if interpretation.kind == "absent":
            return decision(status, reason, origin)
        if interpretation.kind == "corruption":
            return decision("corruption", "recovery_fact_corruption")
        if interpretation.disposition == "completed":
            return decision("completed", "recovery_bundle_completed", "recovery_bundle")
        parked_reason = _PARKED_REASONS.get(interpretation.reason_code or "")
        if parked_reason is None:  # unreachable: a valid parked decision has a parked reason
            return decision("corruption", "recovery_fact_corruption")
        return decision("parked", parked_reason, "recovery_bundle")

    # -- recovery bundles (spec §5.4, read side) -----------------------------------------------

    def _interpret_bundle(self, operation: _Operation) -> BundleInterpretation:
        if not operation.reconcile_events and not operation.decision_events:
            return _ABSENT
        call, dispatch_event = operation.call_event, operation.dispatch_event
        if (
            len(operation.reconcile_events) != 1
            or len(operation.decision_events) != 1
            or call is None
            or dispatch_event is None
            or not operation.operation_id
            or dispatch_event.actions is None
            or dispatch_event.actions.tool_dispatch is None
        ):
            return _corrupt("recovery_fact_shape_conflict")
        reconcile_event = operation.reconcile_events[0]
        decision_event = operation.decision_events[0]
        problem = _validate_bundle(operation, call, dispatch_event, reconcile_event, decision_event)
        if isinstance(problem, str):
            return _corrupt(problem)
        facts = [call, dispatch_event, reconcile_event]
        if operation.response_event is not None:
            facts.append(operation.response_event)
        facts.append(decision_event)
        positions = [self._positions[fact.id] for fact in facts]
        if any(later <= earlier for earlier, later in itertools.pairwise(positions)):
            return _corrupt("event_order_conflict")
        return problem


def _validate_bundle(
    operation: _Operation,
    call_event: RuntimeEvent,
    dispatch_event: RuntimeEvent,
    reconcile_event: RuntimeEvent,
    decision_event: RuntimeEvent,
) -> BundleCode | BundleInterpretation:
    """Validation codes of a committed bundle, first failing wins (spec §5.4)."""
    assert dispatch_event.actions is not None
    assert dispatch_event.actions.tool_dispatch is not None
    dispatch = dispatch_event.actions.tool_dispatch
    operation_id = operation.operation_id
    tool_call_id = operation.tool_call_id
    tool_name = operation.tool_name or dispatch.tool_name
    spine = (dispatch_event.invocation_id, dispatch_event.run_id, dispatch_event.turn_id)

    def on_spine(event: RuntimeEvent) -> bool:
        return not event.partial and (event.invocation_id, event.run_id, event.turn_id) == spine

    def bound(event: RuntimeEvent) -> bool:
        refs = event.refs
        return (
            refs is not None
            and refs.operation_id == operation_id
            and refs.tool_call_id == tool_call_id
        )

    call = call_event.function_call
    if (
        call is None
        or call.id != tool_call_id
        or call.name != tool_name
        or classify_lane(call_event).is_conflict
        or not on_spine(call_event)
    ):
        return "call_identity_conflict"
    if _hash_or_none(call.name, call.args) != dispatch.canonical_args_hash:
        return "canonical_args_hash_conflict"
    if (
        dispatch.operation_id != operation_id
        or dispatch.provider_tool_call_id != tool_call_id
        or dispatch.tool_name != tool_name
        or classify_lane(dispatch_event).is_conflict
        or not on_spine(dispatch_event)
        or dispatch_event.session_id != call_event.session_id
        or not bound(dispatch_event)
    ):
        return "dispatch_identity_conflict"
    if dispatch.recovery_mode != "reconcile":
        return "recovery_mode_unsupported"

    reconcile_fact = reconcile_event.actions.tool_recovery if reconcile_event.actions else None
    if (
        reconcile_fact is None
        or reconcile_fact.kind != "maka.tool.reconcile_result"
        or not isinstance(reconcile_fact.payload, ReconcileResultPayload)
    ):
        return "reconcile_fact_invalid"
    decision_fact = decision_event.actions.tool_recovery if decision_event.actions else None
    if (
        decision_fact is None
        or decision_fact.kind != "maka.tool.recovery_decision"
        or not isinstance(decision_fact.payload, CompletedDecisionPayload | ParkedDecisionPayload)
    ):
        return "decision_fact_invalid"
    reconcile = reconcile_fact.payload
    decision = decision_fact.payload

    for fact_event in (reconcile_event, decision_event):
        if (
            classify_lane(fact_event).is_conflict
            or not on_spine(fact_event)
            or fact_event.session_id != call_event.session_id
            or not bound(fact_event)
        ):
            return "recovery_fact_identity_conflict"
    if reconcile.operation_id != operation_id or decision.operation_id != operation_id:
        return "operation_identity_conflict"

    expected_evidence = [call_event.id, dispatch_event.id, reconcile_event.id]
    outcome_event = operation.response_event
    if isinstance(decision, CompletedDecisionPayload):
        if outcome_event is None:
            return "outcome_required"
        outcome = outcome_event.function_response
        if (
            outcome_event.session_id != call_event.session_id
            or classify_lane(outcome_event).is_conflict
            or not on_spine(outcome_event)
            or outcome is None
            or outcome.id != tool_call_id
            or outcome.name != tool_name
            or not bound(outcome_event)
        ):
            return "outcome_identity_conflict"
        if outcome.is_error is True:
            return "outcome_not_successful"
        if decision.outcome_event_id != outcome_event.id:
            return "outcome_reference_conflict"
        if reconcile.observation != "matches_expected_state":
            return "reconcile_decision_conflict"
        expected_evidence.append(outcome_event.id)
    else:
        if outcome_event is not None:
            return "outcome_for_parked"
        if decision.reason_code != _PARKED_REASON_FOR_OBSERVATION.get(reconcile.observation):
            return "reconcile_decision_conflict"

    if list(decision.evidence_event_ids) != expected_evidence:
        return "evidence_order_conflict"
    return BundleInterpretation(
        "valid", disposition=decision.disposition, reason_code=decision.reason_code
    )


def resolve_tool_operations(events: Sequence[RuntimeEventInput]) -> Resolution:
    """Classify every tool operation of an immutable ledger prefix (physical order).

    Pure and deterministic: the fold of ``ResolverState.feed`` over ``events``.
    """
    state = ResolverState()
    for event in decode_events(events):
        state.feed(event)
    return state.resolution()


def would_introduce_issue(state: ResolverState, event: RuntimeEventInput) -> ResolverIssue | None:
    """First ledger issue that appending ``event`` after ``state`` would introduce, else
    ``None``. Observationally pure (see the module docstring); O(1)-ish, no rescan."""
    introduced = state.issues_if_fed((event,))
    return introduced[0] if introduced else None
