"""The RecoveryResolver's scanner: one physical-order fold of a run's tool facts.

Why a separate module: the scan (which event attaches to which operation, and which ledger
issue it raises, tool-journal.md#scanner) is the part every reader shares bit for bit; the
decisions and bundle readings built on top of it live in :mod:`maka_es.tooljournal.resolver`.

Why journalled mutation: a prospective check (would this write introduce an issue?) runs the
very same step code and then rolls back. Every change to the scan state therefore goes through
:meth:`ToolScanner._set`, ``_put`` or ``_append``, which record an undo step while a
prospective check is open. The state is never copied (copying would be O(history)).
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TypeVar

from maka_es.tooljournal.bundle import hash_or_none
from maka_es.tooljournal.resolution import ResolverIssue, ResolverIssueCode, ToolBoundaryProtocol
from maka_es.tooljournal.scan_records import (
    EventRef,
    ScannedOperation,
    no_event_at,
    same_execution,
)
from maka_es.wire.events import TOOL_BOUNDARY_PROTOCOL_V1, FunctionCallContent, RuntimeEvent
from maka_es.wire.lanes import LaneClassification, classify_lane

__all__ = ["EventRef", "ScannedOperation", "ToolScanner", "same_execution"]

_K = TypeVar("_K")
_V = TypeVar("_V")

#: Recent events (and calls) whose lane (and args hash) the scanner keeps, at most each.
MEMO_LIMIT = 64


def _remember(memo: dict[int, _V], key: int, value: _V) -> None:
    memo[key] = value
    if len(memo) > MEMO_LIMIT:
        del memo[next(iter(memo))]


class ToolScanner:
    """The scan state and its step (tool-journal.md#scanner); see the module docstring."""

    __slots__ = (
        "_args_hashes",
        "_call_map",
        "_count",
        "_lanes",
        "_marker_issues",
        "_operation_list",
        "_operation_map",
        "_pending",
        "_positions",
        "_protocol",
        "_scanner_issues",
        "_spines",
        "_undo",
        "event_at",
    )

    def __init__(self) -> None:
        self._count = 0
        self._protocol: ToolBoundaryProtocol | None = None
        self._marker_issues: list[ResolverIssue] = []
        self._scanner_issues: list[ResolverIssue] = []
        # last physical index of every event id (duplicates included): the ids seen so far,
        # and the positions the bundle order check reads
        self._positions: dict[str, int] = {}
        self._spines: dict[str, tuple[str, str, str]] = {}
        self._operation_list: list[ScannedOperation] = []
        self._call_map: dict[tuple[str, str], ScannedOperation] = {}
        self._operation_map: dict[str, ScannedOperation] = {}
        #: Builds the three operation maps of a state restored from a snapshot, on first use.
        self._pending: Callable[[], None] | None = None
        self._undo: list[Callable[[], None]] | None = None
        #: The event at a physical position, for a state whose refs no longer hold their
        #: events (restored from a snapshot, ADR 0032); the Run installs its ledger reader.
        self.event_at: Callable[[int], RuntimeEvent] = no_event_at
        # Pure results per frozen instance, kept with the instance so its id is not reused:
        # a decision's prospective check and the fold after its commit see the very same
        # event objects, so the lane and the args hash are computed once per step (ADR 0026).
        # Not scan state: never journalled, and a rollback keeps them on purpose.
        self._lanes: dict[int, tuple[RuntimeEvent, LaneClassification]] = {}
        self._args_hashes: dict[int, tuple[FunctionCallContent, str | None]] = {}

    # -- the operation maps, built on first use after a restore (ADR 0032) ----------------------

    def _inflate(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending()

    @property
    def _operations(self) -> list[ScannedOperation]:
        if self._pending is not None:
            self._inflate()
        return self._operation_list

    @property
    def _by_call(self) -> dict[tuple[str, str], ScannedOperation]:
        if self._pending is not None:
            self._inflate()
        return self._call_map

    @property
    def _by_operation(self) -> dict[str, ScannedOperation]:
        if self._pending is not None:
            self._inflate()
        return self._operation_map

    def lane_of(self, event: RuntimeEvent) -> LaneClassification:
        """``classify_lane(event)``, computed once per event instance while it is recent."""
        return self._lane(event, True)

    def _lane(self, event: RuntimeEvent, keep: bool) -> LaneClassification:
        """The lane, from the memo if ``event`` is there; remembered only when ``keep``.

        Why ``keep`` (ADR 0034): only a write remembers (its decision and prospective check
        run before the fold after its commit, on the same instances); a plain fold meets
        each event once, so remembering it could never be read back."""
        kept = self._lanes.get(id(event))
        if kept is not None and kept[0] is event:
            return kept[1]
        lane = classify_lane(event)
        if keep:
            _remember(self._lanes, id(event), (event, lane))
        return lane

    def full_event(self, ref: EventRef) -> RuntimeEvent:
        """The event behind ``ref``: kept in memory, or read by position (ADR 0032)."""
        return ref.event if ref.event is not None else self.event_at(ref.position)

    def args_hash_of(self, call: FunctionCallContent) -> str | None:
        """``hash_or_none(call.name, call.args)``, computed once per call instance while it
        is recent (the model is frozen and its args were validated when it was built)."""
        return self._args_hash(call, True)

    def _args_hash(self, call: FunctionCallContent, keep: bool) -> str | None:
        """As :meth:`_lane`, for the args hash."""
        kept = self._args_hashes.get(id(call))
        if kept is not None and kept[0] is call:
            return kept[1]
        digest = hash_or_none(call.name, call.args)
        if keep:
            _remember(self._args_hashes, id(call), (call, digest))
        return digest

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
        *operations: ScannedOperation,
    ) -> None:
        issue = ResolverIssue(code=code, event_id=event_id)
        self._append(self._scanner_issues, issue)
        for operation in operations:
            self._append(operation.issue_codes, code)
        introduced.append(issue)

    # -- the scanner step ----------------------------------------------------------------------

    def _step(self, event: RuntimeEvent, verified: bool = False) -> tuple[ResolverIssue, ...]:
        index = self._count
        positions = self._positions
        seen = event.id in positions
        if self._undo is None:  # a plain fold: nothing to roll back, write directly
            self._count = index + 1
            positions[event.id] = index
        else:
            self._set(self, "_count", index + 1)
            self._put(positions, event.id, index)
        actions = event.actions  # ``protocol_marker`` is None unless a runtime protocol is given
        markers = (
            self._marker_step(event, index)
            if actions is not None and actions.runtime_protocol is not None
            else ()
        )
        scanned: list[ResolverIssue] = []
        self._scan(event, index, seen, scanned, verified)
        if not markers:
            return tuple(scanned) if scanned else ()
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

    def _scan(
        self, event: RuntimeEvent, index: int, seen: bool, out: list[ResolverIssue], verified: bool
    ) -> None:
        if seen:  # an id already in ``_positions``: every stepped event is there
            self._issue(out, "duplicate_event_id", event.id)
            return

        known = self._spines.get(event.invocation_id)
        if known is None:
            spine = (event.session_id, event.run_id, event.turn_id)
            self._put(self._spines, event.invocation_id, spine)
        elif known[0] != event.session_id or known[1] != event.run_id or known[2] != event.turn_id:
            self._issue(out, "invocation_identity_conflict", event.id)
        # (an equal spine is already there: rewriting it changed nothing)

        lane = self._lane(event, self._undo is not None)
        if lane.is_conflict:
            self._issue(out, "semantic_lane_conflict", event.id)
            return
        if event.partial:
            return  # partial ordinary events never take part in tool analysis
        if lane.lane == "function_call":
            self._scan_call(event, EventRef.of(event, index), out, verified)
        elif lane.lane == "tool_dispatch":
            self._scan_dispatch(event, EventRef.of(event, index), out, verified)
        elif lane.lane == "function_response":
            self._scan_response(event, EventRef.of(event, index), out)
        elif lane.lane in ("reconcile_result", "recovery_decision"):
            self._scan_recovery_fact(
                event, EventRef.of(event, index), lane.lane == "reconcile_result", out
            )

    def _register(self, key: tuple[str, str], operation: ScannedOperation) -> None:
        operation.key = key  # a fresh operation: nothing to undo
        self._append(self._operations, operation)
        self._put(self._by_call, key, operation)

    def _scan_call(
        self, event: RuntimeEvent, ref: EventRef, out: list[ResolverIssue], verified: bool
    ) -> None:
        call = event.function_call
        assert call is not None
        key = (event.invocation_id, call.id)
        existing = self._by_call.get(key)
        if existing is None:
            operation = ScannedOperation(call.id, call.name, call_event=ref)
            operation.call_verified = verified
            self._register(key, operation)
            return
        if existing.call_event is not None:
            self._issue(out, "duplicate_call", event.id, existing)
            return
        # a dispatch or response arrived first; the call completes that operation
        self._set(existing, "call_event", ref)
        self._set(existing, "call_verified", verified)
        if existing.tool_name != call.name:
            self._issue(out, "identity_conflict", event.id, existing)

    def _scan_dispatch(
        self, event: RuntimeEvent, ref: EventRef, out: list[ResolverIssue], verified: bool
    ) -> None:
        assert event.actions is not None
        dispatch = event.actions.tool_dispatch
        assert dispatch is not None
        key = (event.invocation_id, dispatch.provider_tool_call_id)
        operation = self._by_call.get(key)
        if operation is None:
            operation = ScannedOperation(
                dispatch.provider_tool_call_id,
                dispatch.tool_name,
                operation_id=dispatch.operation_id,
                dispatch_event=ref,
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
        self._set(operation, "dispatch_event", ref)
        self._put(self._by_operation, dispatch.operation_id, operation)

        refs = event.refs
        if (
            operation.tool_name != dispatch.tool_name
            or refs is None
            or refs.operation_id != dispatch.operation_id
            or refs.tool_call_id != dispatch.provider_tool_call_id
            or (operation.call_event is not None and not same_execution(operation.call_event, ref))
        ):
            self._issue(out, "identity_conflict", event.id, operation)

        if self._args_hash_conflict(operation, dispatch.canonical_args_hash, verified):
            self._issue(out, "canonical_args_hash_conflict", event.id, operation)

        response = operation.response_event
        if response is not None:
            # the outcome was committed before T1: impossible order, and the earlier response
            # must now also be bound to this operation
            self._issue(out, "event_order_conflict", event.id, operation)
            if not response.bound_to(
                dispatch.operation_id, dispatch.provider_tool_call_id
            ) or not same_execution(ref, response):
                self._issue(out, "identity_conflict", response.id, operation)

    def _args_hash_conflict(
        self, operation: ScannedOperation, args_hash: str, verified: bool
    ) -> bool:
        """The dispatch's ``canonicalArgsHash`` differs from its call's arguments.

        Why a verified pair skips the hash (ADR 0025): both rows still hash to the digest written
        with them, and the write that committed this dispatch was refused had the same scan
        found a conflict (every tool write is judged by the scanner before it is saved). A row
        that does not match its digest, or an event fed from outside the store, is hashed."""
        if operation.call_event is None or (verified and operation.call_verified):
            return False
        call = self.full_event(operation.call_event).function_call
        if call is None:
            return False
        return self._args_hash(call, self._undo is not None) != args_hash

    def _scan_response(self, event: RuntimeEvent, ref: EventRef, out: list[ResolverIssue]) -> None:
        response = event.function_response
        assert response is not None
        key = (event.invocation_id, response.id)
        operation = self._by_call.get(key)
        if operation is None:
            orphan = ScannedOperation(response.id, response.name, response_event=ref)
            self._register(key, orphan)
            self._issue(out, "orphan_response", event.id, orphan)
            return
        if operation.response_event is not None:
            self._issue(out, "duplicate_response", event.id, operation)
            return
        self._set(operation, "response_event", ref)
        if (
            operation.tool_name != response.name
            or not same_execution(operation.call_event, ref)
            or (
                operation.operation_id is not None
                and not ref.bound_to(operation.operation_id, operation.tool_call_id)
            )
        ):
            self._issue(out, "identity_conflict", event.id, operation)

    def _scan_recovery_fact(
        self, event: RuntimeEvent, ref: EventRef, is_reconcile: bool, out: list[ResolverIssue]
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
        self._append(target, ref)
