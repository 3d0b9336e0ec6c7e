"""The RecoveryResolver's scanner: one physical-order fold of a run's tool facts, its compact
records, the issues it raises, and its restored event ids (ADR 0032).

Why one module: the scan (which event attaches to which operation, and which ledger issue it
raises, tool-journal.md#scanner) is the part every reader shares bit for bit; the decisions and
bundle readings built on top of it live in :mod:`maka_es.tooljournal.model.resolver`. A Run snapshot
must restore exactly the state a full fold builds, so the records the scan keeps are compact
(ids, positions, spines, refs bindings, ``is_error``; never RuntimeEvents), and every change
to an operation is marked (``touched``) once a snapshot is kept, so the next snapshot segment
holds only the change; the segments' form is :mod:`maka_es.tooljournal.model.segments` (ADR 0044).

Why journalled mutation: a prospective check (would this write introduce an issue?) runs the
very same step code and then rolls back. Every change to the scan state therefore goes through
:meth:`ToolScanner._set`, ``_put`` or ``_append``, which record an undo step while a
prospective check is open. The state is never copied (copying would be O(history)). Pure.
"""

from __future__ import annotations

import base64
import json
import sys
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar, overload

from maka_es.errors import StoreCorruptionError
from maka_es.tooljournal.model.bundle import hash_or_none
from maka_es.wire.events import (
    TOOL_BOUNDARY_PROTOCOL_V1,
    FunctionCallContent,
    FunctionResponseContent,
    LaneClassification,
    RuntimeEvent,
    ValueModel,
    classify_lane,
)

__all__ = [
    "EventRef",
    "SnapshotIds",
    "SnapshotPositions",
    "ResolverIssue",
    "ResolverIssueCode",
    "ScannedOperation",
    "ToolBoundaryProtocol",
    "ToolScanner",
    "id_index",
    "load_id_index",
    "SegmentIdIndex",
    "merge_id_indexes",
    "forget_event",
    "same_execution",
]

_K = TypeVar("_K")
_V = TypeVar("_V")
_S = TypeVar("_S", bound="ToolScanner")

# -- the issues the scan raises (tool-journal.md#scanner) -----------------------------------------

ToolBoundaryProtocol = Literal["t1_after_preflight_v1"]

ResolverIssueCode = Literal[
    "protocol_marker_invalid",
    "duplicate_event_id",
    "invocation_identity_conflict",
    "semantic_lane_conflict",
    "duplicate_call",
    "duplicate_dispatch",
    "duplicate_operation",
    "identity_conflict",
    "canonical_args_hash_conflict",
    "event_order_conflict",
    "orphan_response",
    "duplicate_response",
]


class ResolverIssue(ValueModel):
    """A ledger-level defect found by the resolver's scan (``{code, eventId}``)."""

    code: ResolverIssueCode
    event_id: str


# -- the scan's compact records -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventRef:
    """What the scan reads later of one tool event, instead of the event itself.

    Why compact: the scan state must survive a snapshot of the Run (ADR 0032) without holding
    every RuntimeEvent. Later steps read only the id, the physical position, the execution
    spine, the ``refs`` binding and a response's ``is_error``; the full event is kept while it
    is in memory (``event``) and, when it is not (a state restored from a snapshot), the rare
    readers that need it (a recovery bundle's interpretation, a dispatch's args hash) get it
    by position from the scanner's ``event_at``.
    """

    id: str
    position: int
    identity: tuple[str, str, str, str]
    refs: tuple[str | None, str | None] | None
    is_error: bool = False
    event: RuntimeEvent | None = field(default=None, compare=False)

    @classmethod
    def of(cls, event: RuntimeEvent, position: int) -> EventRef:
        """The ref of ``event`` at ``position``, equal to ``EventRef(...)`` of the same values.

        Why not ``cls(...)``: the fold makes one ref per tool event, and a frozen dataclass's
        ``__init__`` sets each field through ``object.__setattr__``; writing the slots through
        their descriptors is about twice as fast and leaves the instance as frozen (ADR 0034).
        """
        refs = event.refs
        content = event.content
        ref = _new_ref(cls)
        _set_id(ref, event.id)
        _set_position(ref, position)
        _set_identity(ref, (event.session_id, event.invocation_id, event.run_id, event.turn_id))
        _set_refs(ref, None if refs is None else (refs.operation_id, refs.tool_call_id))
        _set_is_error(
            ref, isinstance(content, FunctionResponseContent) and content.is_error is True
        )
        _set_event(ref, event)
        return ref

    def bound_to(self, operation_id: str | None, tool_call_id: str) -> bool:
        """The ref's ``refs`` name this operation id and provider call id."""
        refs = self.refs
        return refs is not None and refs[0] == operation_id and refs[1] == tool_call_id


@dataclass(slots=True, eq=False)
class ScannedOperation:
    """Scanner bookkeeping for one provider call key ``(invocationId, providerToolCallId)``.

    Mutable and private to the resolver: only the scanner touches it, always through the
    journal helpers. It holds :class:`EventRef` records, never bare events (ADR 0032).
    """

    tool_call_id: str
    tool_name: str | None
    operation_id: str | None = None
    call_event: EventRef | None = None
    dispatch_event: EventRef | None = None
    response_event: EventRef | None = None
    reconcile_events: list[EventRef] = field(default_factory=list)
    decision_events: list[EventRef] = field(default_factory=list)
    issue_codes: list[ResolverIssueCode] = field(default_factory=list)
    #: ``call_event`` was read from a row the store verified (ADR 0025): see ``_scan_dispatch``.
    call_verified: bool = False
    #: ``(invocationId, providerToolCallId)``: the key it is registered under.
    key: tuple[str, str] = ("", "")


_new_ref = object.__new__
_set_id, _set_position, _set_identity, _set_refs, _set_is_error, _set_event = (
    EventRef.__dict__[name].__set__
    for name in ("id", "position", "identity", "refs", "is_error", "event")
)


def forget_event(ref: EventRef) -> None:
    """``ref`` stops holding its event (it is read by position when needed, ADR 0044)."""
    _set_event(ref, None)


def same_execution(first: EventRef | None, second: EventRef) -> bool:
    """Both events carry the same execution spine (session, invocation, run, turn)."""
    return first is not None and first.identity == second.identity


def no_event_at(position: int) -> RuntimeEvent:
    raise LookupError(f"no event at position {position}: this scan state has no event reader")


# -- the scan -------------------------------------------------------------------------------------


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
        "_written",
        "event_at",
        "snapshot_log",
        "touched",
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
        #: Operations changed since the last snapshot segment, by identity, in the order first
        #: changed; ``None`` (nothing tracked) until a snapshot is written or restored (ADR 0044).
        self.touched: dict[int, ScannedOperation] | None = None
        #: Spines, scanner and marker issues the snapshot segments hold so far (ADR 0044).
        self._written = (0, 0, 0)
        #: The snapshot writer's record of what it stored for this state's Run (ADR 0044).
        self.snapshot_log: Any = None
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

    def _touch(self, operation: ScannedOperation) -> None:
        touched = self.touched
        if touched is not None:
            touched[id(operation)] = operation

    def _set(self, target: object, name: str, value: object) -> None:
        if self.touched is not None and isinstance(target, ScannedOperation):
            self._touch(target)
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
            self._touch(operation)
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
        self._touch(operation)
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
        self._touch(operation)
        self._append(target, ref)


# -- a restored run's older event ids, parsed and mapped on first use (ADR 0032) ------------------
#
# Why: the first command after reopening a 100k-event run spent most of its time parsing the
# snapshot's 100k ids and building the id -> position map, although a plain append only asks
# whether its new event's id is already committed. The snapshot stores, next to the ids, a
# sorted array of their CRC-32 values (``id_index``); ``SnapshotPositions`` answers "not
# committed" from them (a set of every segment's values, ADR 0044), and builds the exact map on
# the first id whose CRC is in the set (a duplicate, or a rare collision) or on any other use.
# A false "maybe" only costs the
# map; a committed id is always in the array, so no answer differs from the full map's. The
# body holding both is verified by its digest before it is used (ADR 0032).


def _crc(event_id: str) -> int:
    return zlib.crc32(event_id.encode("utf-8", "surrogatepass"))


def id_index(ids: Sequence[str]) -> str:
    """The sorted CRC-32 values of ``ids`` as base64 of little-endian 32-bit words."""
    words = array("I", sorted({_crc(event_id) for event_id in ids}))
    if sys.byteorder == "big":
        words.byteswap()
    return base64.b64encode(words.tobytes()).decode()


def load_id_index(text: bytes | str) -> array[int]:
    """The array :func:`id_index` wrote (``ValueError``: not one)."""
    words = array("I")
    if words.itemsize != 4:
        raise ValueError("no 32-bit array type on this platform")
    words.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder == "big":
        words.byteswap()
    return words


class SegmentIdIndex:
    """The CRC-32 values of a chain's event ids (ADR 0044): their set (is an id maybe a
    snapshot id) and each segment's own sorted array (which segments may hold it)."""

    __slots__ = ("crcs", "segments")

    def __init__(self, segments: Sequence[array[int]]) -> None:
        self.segments = segments
        words: set[int] = set()
        for words_of in segments:
            words.update(words_of)
        self.crcs = frozenset(words)

    def holders(self, crc: int) -> Iterator[int]:
        """The segments whose array has ``crc``, the last first."""
        for at in range(len(self.segments) - 1, -1, -1):
            words = self.segments[at]
            found = bisect_left(words, crc)
            if found < len(words) and words[found] == crc:
                yield at


def merge_id_indexes(texts: Iterable[bytes | str]) -> SegmentIdIndex:
    """The index of several :func:`id_index` texts (the snapshot segments', ADR 0044). A set
    and the segments' arrays, not one sorted array: a membership test is what an append asks
    (the set costs about half of sorting the concatenated arrays at 100k events), and an
    exact retry's position is found in the one segment holding its id, without parsing and
    mapping every id of the run (issue 23, target 2)."""
    return SegmentIdIndex([load_id_index(text) for text in texts])


class SnapshotIds(Sequence[str]):
    """The ordered ids of a restored run's older events: their count at once, the ids
    themselves parsed from the snapshot's JSON text (or texts, one per segment, concatenated;
    ADR 0044) on first use."""

    __slots__ = ("_count", "_ids", "_maps", "_parts", "_starts", "_text")

    def __init__(
        self, text: bytes | Sequence[bytes], count: int, starts: Sequence[int] = (0,)
    ) -> None:
        self._text = [text] if isinstance(text, bytes) else text
        self._count = count
        self._ids: list[str] | None = None
        #: each text's first position (a segment's ``from``), and the texts read so far alone
        self._starts = starts
        self._parts: dict[int, list[str]] = {}
        self._maps: dict[int, dict[str, int]] = {}

    def _part(self, at: int) -> list[str]:
        """The ids of text ``at`` alone; their number must match the segment's range."""
        part = self._parts.get(at)
        if part is None:
            part = json.loads(self._text[at])
            end = self._starts[at + 1] if at + 1 < len(self._starts) else self._count
            if (
                not isinstance(part, list)
                or len(part) != end - self._starts[at]
                or not all(isinstance(i, str) for i in part)
            ):
                raise StoreCorruptionError("a run snapshot's event ids do not match its count")
            self._parts[at] = part
        return part

    def position_in(self, at: int, event_id: str) -> int | None:
        """The last position of ``event_id`` among the ids of text ``at`` (``None``: not
        there), parsing and mapping that text only."""
        mapped = self._maps.get(at)
        if mapped is None:
            part, start = self._part(at), self._starts[at]
            mapped = self._maps[at] = dict(zip(part, range(start, start + len(part)), strict=True))
        return mapped.get(event_id)

    def _one(self, index: int) -> str:
        """The id at ``index`` (0-based, not negative), from its text alone until all are
        parsed (an exact retry's check of one older event, issue 23, target 2)."""
        if self._ids is not None or not 0 <= index < self._count:
            return self._list()[index]
        at = bisect_right(self._starts, index) - 1
        return self._part(at)[index - self._starts[at]]

    @property
    def parsed(self) -> bool:
        """Probe: the ids were parsed."""
        return self._ids is not None

    def _list(self) -> list[str]:
        ids = self._ids
        if ids is None:
            ids = []
            for text in self._text:
                part = json.loads(text)
                if not isinstance(part, list):
                    raise StoreCorruptionError("a run snapshot's event ids are not a list")
                ids += part
            if (
                not isinstance(ids, list)
                or len(ids) != self._count
                or not all(isinstance(i, str) for i in ids)
            ):
                raise StoreCorruptionError("a run snapshot's event ids do not match its count")
            self._ids = ids
        return ids

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> list[str]: ...
    def __getitem__(self, index: int | slice) -> str | list[str]:
        if isinstance(index, int) and index >= 0:
            return self._one(index)
        return self._list()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SnapshotIds | list | tuple):
            return self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class SnapshotPositions(dict[str, int]):
    """``ToolScanner._positions`` of a restored state: starts empty (ids stepped after the
    restore go in as usual) and answers a snapshot id's membership from the CRC index; builds the
    full map (snapshot ids first, later positions win) when an answer needs it."""

    __slots__ = ("_full", "_ids", "_index", "_segments")

    def __init__(self, ids: SnapshotIds, index: Iterable[int] | SegmentIdIndex) -> None:
        super().__init__()
        self._segments = index if isinstance(index, SegmentIdIndex) else None
        crcs = index.crcs if isinstance(index, SegmentIdIndex) else frozenset(index)
        self._ids, self._index, self._full = ids, crcs, False

    @property
    def built(self) -> bool:
        """Probe: the full map was built."""
        return self._full

    def _maybe_snapshot_id(self, key: object) -> bool:
        if self._full or not isinstance(key, str):
            return False
        return _crc(key) in self._index

    def _build(self) -> None:
        if self._full:
            return
        self._full = True
        after = dict.copy(self)
        dict.clear(self)
        dict.update(self, zip(self._ids, range(len(self._ids)), strict=True))
        dict.update(self, after)

    def _position(self, key: object) -> int | None:
        """``key``'s position, as the full map would answer it (``None``: not in it). An id
        put after the restore is later than every snapshot id, so it wins; a snapshot id is
        looked up in the segments holding its CRC (the last first, as later positions win)
        without building the map, when the index has the segments' arrays."""
        if not isinstance(key, str):
            return None
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        if not self._maybe_snapshot_id(key):
            return None
        segments = self._segments
        if segments is None:
            self._build()
            return dict.get(self, key)
        for at in segments.holders(_crc(key)):
            position = self._ids.position_in(at, key)
            if position is not None:
                return position
        return None

    def __contains__(self, key: object) -> bool:
        return self._position(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        position = self._position(key)
        return default if position is None else position

    def __getitem__(self, key: str) -> int:
        position = self._position(key)
        if position is None:
            raise KeyError(key)
        return position

    def __delitem__(self, key: str) -> None:
        """Undoing a prospective step's new id (``ToolScanner._put``) builds nothing: an id
        put after the restore while the map was not built is not a snapshot id (its ``in`` check
        would have built it)."""
        if not self._full and not dict.__contains__(self, key):
            self._build()
        dict.__delitem__(self, key)


def _building(name: str) -> Callable[..., Any]:
    method = getattr(dict, name)

    def call(self: SnapshotPositions, *args: Any, **kwargs: Any) -> Any:
        self._build()
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


# Every other reader of the map sees the full map.
for _name in (
    "__iter__", "__len__", "__reversed__", "__repr__", "__eq__", "__ne__", "__or__",
    "keys", "values", "items", "copy", "pop", "popitem", "setdefault",
):  # fmt: skip
    setattr(SnapshotPositions, _name, _building(_name))
