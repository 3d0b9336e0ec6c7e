"""The resolver's scan state and the journal fold as plain JSON values, and back (ADR 0032).

Why here, next to the scanner: a Run snapshot must restore exactly the state a full fold
builds, so the one module that knows the scanner's maps writes and reads them. The records are
compact (:mod:`maka_es.tooljournal.scan_records`): ids, positions, spines and refs bindings.
Events themselves are not part of the scan state; the Run snapshot embeds the few a recovery
bundle's interpretation reads (:func:`bundle_positions`), and the others are read from the
ledger by position when a rare reader needs one (``ToolScanner.event_at``).

The map keyed by event id (``_positions``) is rebuilt from the run's ordered event ids, which
the Run snapshot keeps anyway, only when a command needs more than "this new id is not
committed" (:class:`~maka_es.tooljournal.scan_ids.HeadPositions`). Pure: values in, values out.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from maka_es.tooljournal.operation import ToolJournal, ToolOperationState
from maka_es.tooljournal.resolution import ResolverIssue, ToolBoundaryProtocol
from maka_es.tooljournal.resolver import ResolverState
from maka_es.tooljournal.scan_ids import HeadIds, HeadPositions
from maka_es.tooljournal.scan_records import EventRef, ScannedOperation
from maka_es.wire.events import RuntimeEvent

__all__ = [
    "PartText",
    "bundle_events",
    "dump_journal",
    "dump_scan",
    "restore_journal",
    "read_part",
    "restore_scan",
]

#: A snapshot part's JSON text, or how to read it (from its own row, on first use; ADR 0032).
PartText: TypeAlias = bytes | Callable[[], bytes]


def read_part(text: PartText) -> bytes:
    """The part's JSON text, read now if it was left in the store."""
    return text if isinstance(text, bytes) else text()


_OP_FIELDS = (
    "operation_id",
    "tool_call_id",
    "tool_name",
    "canonical_args_hash",
    "recovery_mode",
    "state",
    "call_event_id",
    "dispatch_event_id",
    "result_event_id",
    "observation",
    "metadata",
    "version",
)


def _dump_ref(ref: EventRef | None) -> list[Any] | None:
    if ref is None:
        return None
    refs = ref.refs
    return [
        ref.id,
        ref.position,
        *ref.identity,
        refs is not None,
        *(refs or (None, None)),
        ref.is_error,
    ]


def _load_ref(data: Sequence[Any] | None, events: Mapping[int, RuntimeEvent]) -> EventRef | None:
    if data is None:
        return None
    event_id, position, session, invocation, run, turn, has_refs, op_id, call_id, error = data
    return EventRef(
        event_id,
        position,
        (session, invocation, run, turn),
        (op_id, call_id) if has_refs else None,
        error,
        events.get(position),
    )


def _refs_of(operation: ScannedOperation) -> list[EventRef]:
    single = (operation.call_event, operation.dispatch_event, operation.response_event)
    return [
        *(ref for ref in single if ref is not None),
        *operation.reconcile_events,
        *operation.decision_events,
    ]


def bundle_events(state: ResolverState) -> dict[int, RuntimeEvent]:
    """The events a bundle interpretation reads (of operations with recovery facts), by
    position; a ref without its event is read through ``state.event_at`` (rare)."""
    return {
        ref.position: state.full_event(ref)
        for operation in state._operations
        if operation.reconcile_events or operation.decision_events
        for ref in _refs_of(operation)
    }


def dump_scan(state: ResolverState) -> tuple[dict[str, Any], str]:
    """The scan state as JSON values, and its operations as one JSON text of their own, restored
    on first use (the undo journal must be closed). A state restored from a snapshot whose
    operations were never used hands back the text it was given."""
    if state._undo is not None:
        raise RuntimeError("cannot snapshot a scan state inside a prospective check")
    pending = state._pending
    if isinstance(pending, _PendingOperations):
        operations = read_part(pending.text).decode()
    else:
        operations = json.dumps(_dump_operations(state), separators=(",", ":"))
    return {
        "count": state._count,
        "protocol": state._protocol,
        "markerIssues": [[i.code, i.event_id] for i in state._marker_issues],
        "scannerIssues": [[i.code, i.event_id] for i in state._scanner_issues],
        "spines": [[invocation, *spine] for invocation, spine in state._spines.items()],
    }, operations


def _dump_operations(state: ResolverState) -> list[Any]:
    index = {id(operation): i for i, operation in enumerate(state._operations)}
    rows = [
        [
            op.tool_call_id,
            op.tool_name,
            op.operation_id,
            list(op.key),
            op.call_verified,
            list(op.issue_codes),
            _dump_ref(op.call_event),
            _dump_ref(op.dispatch_event),
            _dump_ref(op.response_event),
            [_dump_ref(ref) for ref in op.reconcile_events],
            [_dump_ref(ref) for ref in op.decision_events],
        ]
        for op in state._operations
    ]
    return [rows, [[key, index[id(op)]] for key, op in state._by_operation.items()]]


class _PendingOperations:
    """The operations of a restored scan state, parsed when the scanner first needs them."""

    __slots__ = ("events", "state", "text")

    def __init__(self, state: ResolverState, text: PartText, events: Mapping[int, RuntimeEvent]):
        self.state, self.text, self.events = state, text, events

    def __call__(self) -> None:
        rows, by_operation = json.loads(read_part(self.text))
        state, events = self.state, self.events
        for row in rows:
            tool_call_id, name, operation_id, key, verified, codes, call, dispatch, response = row[
                :9
            ]
            operation = ScannedOperation(
                tool_call_id,
                name,
                operation_id,
                _load_ref(call, events),
                _load_ref(dispatch, events),
                _load_ref(response, events),
                [ref for ref in (_load_ref(r, events) for r in row[9]) if ref is not None],
                [ref for ref in (_load_ref(r, events) for r in row[10]) if ref is not None],
                list(codes),
                verified,
                (key[0], key[1]),
            )
            state._operation_list.append(operation)
            state._call_map[operation.key] = operation
        state._operation_map = {key: state._operation_list[i] for key, i in by_operation}


def restore_scan(
    data: Mapping[str, Any],
    operations: PartText,
    event_ids: HeadIds,
    id_index: array[int],
    events: Mapping[int, RuntimeEvent],
) -> ResolverState:
    """The scan state :func:`dump_scan` wrote (its values and its operations' JSON text), over
    the run's ordered ``event_ids`` and their CRC index (parsed and mapped on first use);
    ``events`` are the embedded bundle events by position (refs at other positions hold no
    event)."""
    state = ResolverState()
    if data["count"] != len(event_ids):
        raise ValueError(f"scan covers {data['count']} events, the run {len(event_ids)}")
    state._count = data["count"]
    state._protocol = cast(ToolBoundaryProtocol | None, data["protocol"])
    state._marker_issues = [ResolverIssue(code=c, event_id=e) for c, e in data["markerIssues"]]
    state._scanner_issues = [ResolverIssue(code=c, event_id=e) for c, e in data["scannerIssues"]]
    state._positions = HeadPositions(event_ids, id_index)
    state._spines = {row[0]: (row[1], row[2], row[3]) for row in data["spines"]}
    state._pending = _PendingOperations(state, operations, events)
    return state


def dump_journal(journal: ToolJournal) -> dict[str, Any]:
    """The journal fold as JSON values (its operations, call index and T1 metadata)."""
    return {
        "operations": [
            [getattr(op, name) for name in _OP_FIELDS] for op in journal._operations.values()
        ],
        "calls": [[*key, event_id] for key, event_id in journal._calls.items()],
        "metadata": [[key, dict(values)] for key, values in journal._metadata.items()],
    }


def restore_journal(data: Mapping[str, Any]) -> ToolJournal:
    """The journal fold :func:`dump_journal` wrote."""
    journal = ToolJournal()
    for row in data["operations"]:
        state = ToolOperationState(**dict(zip(_OP_FIELDS, row, strict=True)))
        journal._operations[state.operation_id] = state
    journal._calls = {(invocation, call): event_id for invocation, call, event_id in data["calls"]}
    journal._metadata = dict(data["metadata"])
    return journal
