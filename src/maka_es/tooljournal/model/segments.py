"""The resolver's scan state as snapshot segments, and the maps and lists restored from them on
demand (ADR 0044). Pure.

Why: the first command after reopening a long run folds the facts after its snapshot, and the
first tool event among them used to build every operation of the run (the scan's and the
journal's) before it could look one up: about a second at 100k events. A restored map here
starts empty and answers a key from the one segment that last wrote it, found through the
CRC-32 values of the keys each segment wrote (a key whose CRC no segment holds was never
written: no answer differs from the full map's). A CRC that points at a segment without the
key (a collision), a segment part that cannot be read as stored, and any use other than a
lookup (iteration, length) build the whole map first, as the full fold would have it.
"""

from __future__ import annotations

import base64
import itertools
import json
import sys
import zlib
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias, TypeVar, cast

from maka_es.tooljournal.model.scanner import (
    EventRef,
    ResolverIssue,
    ScannedOperation,
    SegmentIdIndex,
    SnapshotIds,
    SnapshotPositions,
    ToolBoundaryProtocol,
    ToolScanner,
)
from maka_es.wire.codec import canonical_json
from maka_es.wire.events import RuntimeEvent

__all__ = [
    "LazyList",
    "LazyMap",
    "SegmentIndex",
    "crc_of",
    "crc_text",
    "dump_scan_segment",
    "mark_written",
    "restore_scan",
]

_S = TypeVar("_S", bound=ToolScanner)

_K = TypeVar("_K")
_V = TypeVar("_V")

#: A segment lookup: the value of a key, or ``None`` (never written).
Lookup = Callable[[Any], Any]


def crc_of(key: str | tuple[str, ...]) -> int:
    """The CRC-32 of a key (a tuple's parts joined by a unit separator)."""
    text = key if isinstance(key, str) else "\x1f".join(key)
    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def crc_text(keys: Iterable[str | tuple[str, ...]]) -> str:
    """The sorted CRC-32 values of ``keys`` as base64 of little-endian 32-bit words."""
    words = array("I", sorted({crc_of(key) for key in keys}))
    if sys.byteorder == "big":
        words.byteswap()
    return base64.b64encode(words.tobytes()).decode()


def _words(text: str) -> array[int]:
    words = array("I")
    words.frombytes(base64.b64decode(text, validate=True))
    if sys.byteorder == "big":
        words.byteswap()
    return words


class SegmentIndex:
    """Which segment last wrote a key, from each segment's :func:`crc_text` (in order), built
    on first use."""

    __slots__ = ("_last", "_texts")

    def __init__(self, texts: Sequence[str]) -> None:
        self._texts = texts
        self._last: dict[int, int] | None = None

    def segment_of(self, key: str | tuple[str, ...]) -> int | None:
        """The last segment whose keys have ``key``'s CRC (``None``: no segment wrote it)."""
        last = self._last
        if last is None:
            last = {}
            for at, text in enumerate(self._texts):
                last.update(zip(_words(text), itertools.repeat(at)))
            self._last = last
        return last.get(crc_of(key))


_MISSING: Any = object()


class LazyMap(dict[_K, _V]):
    """A dict whose older entries are looked up through ``lookup`` (which puts what it finds
    into the map) until ``complete`` has built them all; other reads complete it first."""

    __slots__ = ("_complete", "_lookup")

    def __init__(self, lookup: Lookup, complete: Callable[[], None]) -> None:
        super().__init__()
        self._lookup: Lookup | None = lookup
        self._complete = complete

    def completed(self) -> None:
        """Every entry is in the map now: answer as a plain dict."""
        self._lookup = None

    def get(self, key: _K, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        lookup = self._lookup
        if lookup is None:
            return default
        value = lookup(key)
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return self.get(key, _MISSING) is not _MISSING  # type: ignore[arg-type]

    def __getitem__(self, key: _K) -> _V:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value  # type: ignore[no-any-return]

    def setdefault(self, key: _K, default: Any = None) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            dict.__setitem__(self, key, default)
            return default
        return value


class LazyList(list[_V]):
    """A list whose older items are built by ``complete`` (put before the items appended
    since) on any read; appending, and removing what was appended, build nothing."""

    __slots__ = ("_complete",)

    def __init__(self, complete: Callable[[], None]) -> None:
        super().__init__()
        self._complete: Callable[[], None] | None = complete

    def completed(self, older: Iterable[_V]) -> None:
        """Put the older items first; from now on a plain list."""
        self._complete = None
        list.__setitem__(self, slice(0, 0), list(older))


def _completing(kind: type, name: str) -> Callable[..., Any]:
    method = getattr(kind, name)

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        complete = self._complete
        if complete is not None and (kind is not dict or self._lookup is not None):
            complete()
        return method(self, *args, **kwargs)

    call.__name__ = name
    return call


# Every other read of a lazy container sees all of it.
for _name in (
    "__iter__", "__len__", "__reversed__", "__repr__", "__eq__", "__ne__", "__or__",
    "keys", "values", "items", "copy", "pop", "popitem", "update", "__bool__",
):  # fmt: skip
    if hasattr(dict, _name):
        setattr(LazyMap, _name, _completing(dict, _name))
for _name in (
    "__iter__", "__len__", "__reversed__", "__repr__", "__eq__", "__ne__", "__getitem__",
    "__setitem__", "__contains__", "index", "count", "copy", "pop", "insert", "remove",
    "sort", "reverse", "extend", "__bool__",
):  # fmt: skip
    if hasattr(list, _name):
        setattr(LazyList, _name, _completing(list, _name))


# -- the scan state as snapshot segments, and back (ADR 0032, ADR 0044) ---------------------------
#
# Events themselves are not part of the scan state; the Run snapshot embeds the few a recovery
# bundle's interpretation reads (``_recovery_events``), and the others are read from the ledger by
# position when a rare reader needs one (``ToolScanner.event_at``). The map keyed by event id
# (``_positions``) is rebuilt from the run's ordered event ids, which the Run snapshot keeps
# anyway, only when a command needs more than "this new id is not committed"
# (``SnapshotPositions``).


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


def _recovery_events(state: ToolScanner, operations: Iterable[ScannedOperation]) -> list[Any]:
    """``[position, canonical JSON]`` of the events a bundle interpretation reads, of those of
    ``operations`` that have recovery facts."""
    events = {
        ref.position: state.full_event(ref)
        for operation in operations
        if operation.reconcile_events or operation.decision_events
        for ref in _refs_of(operation)
    }
    return [[p, canonical_json(event)] for p, event in sorted(events.items())]


def dump_scan_segment(state: ToolScanner, *, full: bool) -> tuple[dict[str, Any], str]:
    """The scan state's change since its last snapshot segment (``full``: all of it) as JSON
    values and its operations as a JSON text of their own (ADR 0044), and start tracking
    changes for the next segment. The undo journal must be closed.

    Why a change is O(the change): the operations are the ones in ``touched`` (every mutation
    of an operation goes through ``_set``, ``_issue``, ``_register`` or a recovery fact's
    append, which mark it), still registered (a prospective check may have rolled one back),
    in the order first changed; spines and issues only grow, so the new ones are the tail.
    A restored state whose operations were never read has changed none."""
    if state._undo is not None:
        raise RuntimeError("cannot snapshot a scan state inside a prospective check")
    spines, issues, markers = state._written if not full else (0, 0, 0)
    if full:
        operations: Iterable[ScannedOperation] = state._operations
    else:
        calls = state._call_map
        touched = (state.touched or {}).values()
        operations = [op for op in touched if calls.get(op.key) is op]
    operations = list(operations)
    new_spines = len(state._spines) - spines
    values: dict[str, Any] = {
        "spines": [
            [invocation, *spine]
            for invocation, spine in list(
                itertools.islice(reversed(state._spines.items()), new_spines)
            )[::-1]
        ],
        "scannerIssues": [[i.code, i.event_id] for i in state._scanner_issues[issues:]],
        "markerIssues": [[i.code, i.event_id] for i in state._marker_issues[markers:]],
        "embedded": _recovery_events(state, operations),
    }
    bound_map = state._operation_map
    bound = [bound_map.get(op.operation_id or "") is op for op in operations]
    values["callIndex"] = crc_text(op.key for op in operations)
    values["boundIndex"] = crc_text(
        op.operation_id for op, b in zip(operations, bound, strict=True) if b and op.operation_id
    )
    rows = [_dump_operation(op, b) for op, b in zip(operations, bound, strict=True)]
    return values, json.dumps(rows, separators=(",", ":"))


def mark_written(state: ToolScanner) -> None:
    """The segment :func:`dump_scan_segment` returned is stored: track from here."""
    state.touched = {}
    state._written = (len(state._spines), len(state._scanner_issues), len(state._marker_issues))


def _dump_operation(op: ScannedOperation, bound: bool) -> list[Any]:
    return [
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
        bound,
    ]


#: Reads the operations texts of every snapshot segment, in order (ADR 0044).
SegmentTexts: TypeAlias = Callable[[], Sequence[bytes]]

#: Reads one segment's operations text as stored (``None``: missing or changed).
SegmentText: TypeAlias = Callable[[int], bytes | None]

_Key: TypeAlias = tuple[str, str]


class _RestoredOperations:
    """The operations of a restored scan state, built from their segments when the scanner
    looks one up (:mod:`maka_es.tooljournal.model.segments`): a call key from the segment that last
    wrote it, an operation id from the segment that last wrote it bound; all of them, in the
    order first registered, on any other use (or when a segment cannot answer exactly)."""

    __slots__ = ("_all", "_by_call", "_by_operation", "_events", "_one", "_rows", "_state")

    def __init__(
        self,
        state: ToolScanner,
        texts: tuple[SegmentTexts, SegmentText],
        segments: Sequence[Mapping[str, Any]],
        events: Mapping[int, RuntimeEvent],
    ) -> None:
        self._state, self._events = state, events
        self._all, self._one = texts
        self._by_call = SegmentIndex([segment["callIndex"] for segment in segments])
        self._by_operation = SegmentIndex([segment["boundIndex"] for segment in segments])
        self._rows: dict[int, dict[_Key, list[Any]] | None] = {}
        state._call_map = LazyMap(self.by_key, self.complete)
        state._operation_map = LazyMap(self.by_operation, self.complete)
        state._operation_list = LazyList(self.complete)

    def _segment_rows(self, at: int) -> dict[_Key, list[Any]] | None:
        if at not in self._rows:
            text = self._one(at)
            rows = None if text is None else json.loads(text)
            self._rows[at] = None if rows is None else {(r[3][0], r[3][1]): r for r in rows}
        return self._rows[at]

    def by_key(self, key: _Key) -> ScannedOperation | None:
        at = self._by_call.segment_of(key)
        if at is None:
            return None  # no segment wrote it
        row = (self._segment_rows(at) or {}).get(key)
        if row is None:  # a collision, or a part not as stored: build them all
            self.complete()
            return self._state._call_map.get(key)
        return self._build(key, row)

    def by_operation(self, operation_id: str) -> ScannedOperation | None:
        at = self._by_operation.segment_of(operation_id)
        if at is None:
            return None
        rows = self._segment_rows(at) or {}
        key = next((k for k, r in rows.items() if r[11] and r[2] == operation_id), None)
        if key is None:
            self.complete()
            return self._state._operation_map.get(operation_id)
        operation = self._state._call_map.get(key)
        if operation is None or operation.operation_id != operation_id:  # not as written
            self.complete()
            return self._state._operation_map.get(operation_id)
        dict.__setitem__(self._state._operation_map, operation_id, operation)
        return operation

    def _build(self, key: _Key, row: list[Any]) -> ScannedOperation:
        events = self._events
        tool_call_id, name, operation_id, _, verified, codes, call, dispatch, response = row[:9]
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
            key,
        )
        dict.__setitem__(self._state._call_map, key, operation)
        if row[11]:
            dict.__setitem__(self._state._operation_map, operation_id, operation)
        return operation

    def complete(self) -> None:
        """Every operation: the segments' rows in order, a later row of a key replacing the
        earlier one in place; one already built (and maybe changed since) is kept."""
        state = self._state
        calls, bound = state._call_map, state._operation_map
        assert isinstance(calls, LazyMap)
        assert isinstance(bound, LazyMap)
        calls.completed()
        bound.completed()
        rows: dict[_Key, list[Any]] = {}
        for text in self._all():
            for row in json.loads(text):
                rows[(row[3][0], row[3][1])] = row
        older = []
        for key, row in rows.items():
            built = dict.get(calls, key)
            older.append(built if built is not None else self._build(key, row))
        operations = state._operation_list
        assert isinstance(operations, LazyList)
        operations.completed(older)


def restore_scan(
    kind: type[_S],
    data: Mapping[str, Any],
    segments: Sequence[Mapping[str, Any]],
    operations: tuple[SegmentTexts, SegmentText],
    event_ids: SnapshotIds,
    crc_index: Iterable[int] | SegmentIdIndex,
) -> _S:
    """The scan state the segments describe (each one's values of :func:`dump_scan_segment`,
    in order; ``data``: the count and protocol) as a new ``kind`` (the resolver's state), over
    the run's ordered ``event_ids`` and their CRC index (parsed and mapped on first use); its
    operations are read through ``operations`` (all of them, or one segment's) when looked up.
    The embedded bundle events are the segments' (a later one wins), by position; refs at
    other positions hold no event."""
    state = kind()
    if data["count"] != len(event_ids):
        raise ValueError(f"scan covers {data['count']} events, the run {len(event_ids)}")
    state._count = data["count"]
    state._protocol = cast(ToolBoundaryProtocol | None, data["protocol"])
    events: dict[int, RuntimeEvent] = {}
    for segment in segments:
        for row in segment["spines"]:
            state._spines[row[0]] = (row[1], row[2], row[3])
        state._scanner_issues += [
            ResolverIssue(code=c, event_id=e) for c, e in segment["scannerIssues"]
        ]
        state._marker_issues += [
            ResolverIssue(code=c, event_id=e) for c, e in segment["markerIssues"]
        ]
        for position, text in segment["embedded"]:
            events[position] = RuntimeEvent.model_validate_json(text)
    state._positions = SnapshotPositions(event_ids, crc_index)
    _RestoredOperations(state, operations, segments, events)
    mark_written(state)
    return state
