"""RecoveryResolver: the single authority that classifies tool operations after a crash
(tool-journal.md#resolver).

Why one scanner: the online projection, a rebuild from events and the resume planner must never
disagree about whether a tool may have run. They all consume the same physical-order scan of the
immutable ledger (:mod:`maka_es.tooljournal.model.scanner`), and recovery bundles are read by
the one bundle validator (:mod:`maka_es.tooljournal.model.bundle`).

Why an incremental fold: a run aggregate validates every tool-bearing append against the ledger
it already holds. Rescanning the whole run per append is O(history); ``ResolverState`` instead
keeps the scanner's maps and updates them in O(1) amortised per event (plus hashing the call
arguments once, when a dispatch binds a call). ``resolve_tool_operations`` is simply the fold
over all events followed by ``ResolverState.resolution()``.

Prospective checks are *observationally pure*: ``ResolverState.issues_if_fed`` and
``would_introduce_issue`` run the very same step code with an undo journal and roll the state
back before returning (also on error). The state is therefore never copied (copying would be
O(history)); the price is that one state object must not be used from several threads at once.

The verdict types (per-operation decisions, ``Resolution``; docs/reference/tool-journal.md
#decisions) live here, in the tool journal below the ledger, because the Run aggregate keeps the
resolver's state to validate tool facts online (ADR 0017); the issues are the scanner's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel

from maka_es.tooljournal.model.bundle import ABSENT, BundleInterpretation, interpret_bundle
from maka_es.tooljournal.model.scanner import (
    EventRef,
    ResolverIssue,
    ScannedOperation,
    ToolBoundaryProtocol,
    ToolScanner,
)
from maka_es.wire.events import RuntimeEvent, RuntimeEventInput, ValueModel, decode_events
from maka_es.wire.facts import PARKED_REASON_FOR_OBSERVATION, ParkedReason

__all__ = [
    "OPERATION_ISSUE_PRIORITY",
    "DecisionReason",
    "DecisionStatus",
    "Resolution",
    "ResolverState",
    "SettlementOrigin",
    "ToolDecision",
    "resolve_tool_operations",
    "would_introduce_issue",
]

DecisionStatus = Literal[
    "completed", "definitely_not_dispatched", "indeterminate", "parked", "corruption"
]

DecisionReason = Literal[
    "matching_response",
    "recovery_bundle_completed",
    "dispatch_without_response",
    "new_protocol_before_dispatch",
    "legacy_dispatch_unknown",
    "orphan_dispatch",
    "orphan_response",
    "duplicate_call",
    "duplicate_operation",
    "duplicate_dispatch",
    "duplicate_response",
    "canonical_args_hash_conflict",
    "identity_conflict",
    "event_order_conflict",
    "recovery_fact_corruption",
    "reconcile_matches_prior_state",
    "reconcile_diverged",
    "reconcile_unreadable",
]

SettlementOrigin = Literal["pre_t1_synthetic", "normal_t2", "recovery_bundle"]


class ToolDecision(ValueModel):
    """The resolver's verdict for one tool operation (one provider call key)."""

    tool_call_id: str
    tool_name: str | None = None
    operation_id: str | None = None
    status: DecisionStatus
    reason: DecisionReason
    settlement_origin: SettlementOrigin | None = None
    call_runtime_event_id: str | None = None
    dispatch_runtime_event_id: str | None = None
    response_runtime_event_id: str | None = None
    response_is_error: bool | None = None


class Resolution(ValueModel):
    """Everything the RecoveryResolver concludes about a ledger prefix
    (docs/reference/tool-journal.md#resolution)."""

    decisions: tuple[ToolDecision, ...]
    issues: tuple[ResolverIssue, ...]
    has_corruption: bool
    requires_reconciliation: bool
    tool_boundary_protocol: ToolBoundaryProtocol | None = None


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

_T = TypeVar("_T")

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

_PARKED_REASONS: dict[str, ParkedReason] = {
    reason: reason for reason in PARKED_REASON_FOR_OBSERVATION.values()
}


class ResolverState(ToolScanner):
    """Incremental RecoveryResolver scanner: ``feed`` events in physical order, then
    ``resolution()``.

    Feeding never mutates the events. ``resolution()`` is O(operations) and does not change the
    state, so it may be called after every event. See the module docstring for the purity
    contract of the prospective checks.
    """

    __slots__ = ()

    # -- public API ----------------------------------------------------------------------------

    @property
    def event_count(self) -> int:
        """Number of events folded so far (duplicates and partials included)."""
        return self._count

    def position_of(self, event_id: str) -> int | None:
        """The physical index of the last event fed with ``event_id`` (``None``: never fed).
        The Run's event-id index (exact retries) is this map: it holds the same entries."""
        return self._positions.get(event_id)

    @property
    def tool_boundary_protocol(self) -> ToolBoundaryProtocol | None:
        """``t1_after_preflight_v1`` iff the first event declared it; else ``None`` (an
        unmarked ledger, where a call without a dispatch fact proves nothing)."""
        return self._protocol

    @property
    def issues(self) -> tuple[ResolverIssue, ...]:
        """Ledger issues so far: protocol-marker issues first, then scanner issues."""
        return (*self._marker_issues, *self._scanner_issues)

    @property
    def has_issues(self) -> bool:
        return bool(self._marker_issues or self._scanner_issues)

    def feed(
        self, event: RuntimeEventInput, *, verified: bool = False
    ) -> tuple[ResolverIssue, ...]:
        """Fold one event into the state; return the issues it introduced (in report order).

        ``verified``: the event is a committed row the store vouches for (ADR 0025), so a
        dispatch and call that are both verified skip re-hashing the call's arguments."""
        # an event is what ``decode_events`` would return as it is
        decoded = event if isinstance(event, RuntimeEvent) else decode_events((event,))[0]
        if self._undo is not None:
            raise RuntimeError("ResolverState is inside a prospective check")
        return self._step(decoded, verified)

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
        """The resolver output for everything fed so far
        (docs/reference/tool-journal.md#resolution)."""
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

    # -- decisions (tool-journal.md#decisions) ---------------------------------------------------

    def _decide(self, operation: ScannedOperation) -> ToolDecision:
        """The first matching row of the decision table wins."""
        call, dispatch, response = (
            operation.call_event,
            operation.dispatch_event,
            operation.response_event,
        )
        if call is None and dispatch is not None:
            return _decision(operation, "corruption", "orphan_dispatch")
        if call is None and response is not None:
            return _decision(operation, "corruption", "orphan_response")
        for code in OPERATION_ISSUE_PRIORITY:
            if code in operation.issue_codes:
                return _decision(operation, "corruption", code)
        interpretation = self._interpret_bundle(operation)
        if interpretation.kind == "corruption":
            return _decision(operation, "corruption", "recovery_fact_corruption")
        if interpretation.kind == "valid":
            if interpretation.disposition == "completed":
                return _decision(
                    operation, "completed", "recovery_bundle_completed", "recovery_bundle"
                )
            parked = _PARKED_REASONS.get(interpretation.reason_code or "")
            if parked is None:  # unreachable: a valid parked decision has a parked reason
                return _decision(operation, "corruption", "recovery_fact_corruption")
            return _decision(operation, "parked", parked, "recovery_bundle")
        return _decision(operation, *self._ledger_status(operation))

    def _ledger_status(
        self, operation: ScannedOperation
    ) -> tuple[DecisionStatus, DecisionReason, SettlementOrigin | None]:
        """Rows 7-11: what the call, dispatch and response alone prove."""
        if operation.response_event is not None:
            origin: SettlementOrigin = (
                "normal_t2" if operation.dispatch_event is not None else "pre_t1_synthetic"
            )
            return "completed", "matching_response", origin
        if operation.dispatch_event is not None:
            return "indeterminate", "dispatch_without_response", None
        if self._protocol is not None:
            return "definitely_not_dispatched", "new_protocol_before_dispatch", None
        # absence of a dispatch fact proves nothing without the declared protocol
        return "indeterminate", "legacy_dispatch_unknown", None

    def _interpret_bundle(self, operation: ScannedOperation) -> BundleInterpretation:
        if not operation.reconcile_events and not operation.decision_events:
            return ABSENT  # the common case reads no event (ADR 0032)
        return interpret_bundle(
            operation_id=operation.operation_id,
            tool_call_id=operation.tool_call_id,
            tool_name=operation.tool_name,
            call=self._full(operation.call_event),
            dispatch=self._full(operation.dispatch_event),
            reconciles=[self.full_event(ref) for ref in operation.reconcile_events],
            decisions=[self.full_event(ref) for ref in operation.decision_events],
            outcome=self._full(operation.response_event),
            position=self._positions.__getitem__,
        )

    def _full(self, ref: EventRef | None) -> RuntimeEvent | None:
        return None if ref is None else self.full_event(ref)


def _decision(
    operation: ScannedOperation,
    status: DecisionStatus,
    reason: DecisionReason,
    origin: SettlementOrigin | None = None,
) -> ToolDecision:
    """The decision for ``operation``, built without validation.

    Why trusted (ADR 0034): every value is already typed: ids and names come from validated
    events (``str``), status, reason and origin are literals of the decision table, and
    ``is_error`` is a ``bool``. Validating them again was the largest part of a decision. The
    instance is what validation would build: the same ``__dict__`` (field order), every
    field set, no extra, no private (tests/unit/tooljournal/test_fold_fast_paths.py)."""
    response = operation.response_event
    call, dispatch = operation.call_event, operation.dispatch_event
    return built_model(
        ToolDecision,
        {
            "tool_call_id": operation.tool_call_id,
            "tool_name": operation.tool_name or None,
            "operation_id": operation.operation_id or None,
            "status": status,
            "reason": reason,
            "settlement_origin": origin,
            "call_runtime_event_id": None if call is None else call.id,
            "dispatch_runtime_event_id": None if dispatch is None else dispatch.id,
            "response_runtime_event_id": None if response is None else response.id,
            "response_is_error": None if response is None else response.is_error,
        },
    )


_new_object = object.__new__
_set_attr = object.__setattr__
_Model = TypeVar("_Model", bound=BaseModel)


def built_model(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """An instance of ``cls`` from ``values`` already typed, every field given in declaration
    order, built without validation: what validation builds (that ``__dict__``, every field
    set, no extra, no private). Only for values the caller's own code typed (ADR 0034, ADR
    0037 amendment of 2026-12-02); outside input is always validated."""
    instance = _new_object(cls)
    _set_attr(instance, "__dict__", values)
    _set_attr(instance, "__pydantic_fields_set__", set(values))
    _set_attr(instance, "__pydantic_extra__", None)
    _set_attr(instance, "__pydantic_private__", None)
    return instance


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
