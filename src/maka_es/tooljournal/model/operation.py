"""ToolOperation journal state: a fold of a run's tool facts.

The states are docs/reference/tool-journal.md#journal-states.

Why a fold and not a table: the state of an operation (``prepared`` after T1,
``outcome_committed`` after T2, ``recovery_completed`` / ``recovery_parked`` after a recovery
bundle) is fully determined by the committed RuntimeEvents. Storing it separately would create
a second authority that could disagree with the ledger; folding it means the online state, the
state after reopening and a rebuild from scratch are the same computation (and tests check
that they also agree with the RecoveryResolver).

The only non-derivable input is T1 metadata a tool records for its reconciler (e.g. the
expected and prior content digests of a file write); it is stored as its own fact in the same
transaction as the dispatch and folded in here.

The fold is also written to and read from a Run snapshot as plain JSON values
(:func:`dump_journal`, :func:`restore_journal`, ADR 0032), next to the maps it holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from maka_es.tooljournal.model.resolver import ToolDecision
from maka_es.tooljournal.model.segments import LazyMap, SegmentIndex, crc_text
from maka_es.wire.events import (
    RECONCILE_RESULT_KIND,
    CompletedDecisionPayload,
    ReconcileResultPayload,
    RuntimeEvent,
)

JournalState = Literal["prepared", "outcome_committed", "recovery_completed", "recovery_parked"]


@dataclass(frozen=True, slots=True)
class ToolOperationState:
    """One operation that crossed T1, as the journal sees it."""

    operation_id: str
    tool_call_id: str
    tool_name: str
    canonical_args_hash: str
    recovery_mode: str
    state: JournalState
    call_event_id: str | None
    dispatch_event_id: str
    result_event_id: str | None = None
    observation: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    version: int = 1

    @property
    def is_unsettled(self) -> bool:
        """T1 without T2 and without a recovery decision: the tool may or may not have run."""
        return self.state == "prepared"


class ToolJournal:
    """Fold of tool facts into :class:`ToolOperationState` per operation id (T1 order)."""

    __slots__ = ("_calls", "_metadata", "_new_calls", "_operations", "touched")

    def __init__(self) -> None:
        self._operations: dict[str, ToolOperationState] = {}
        self._calls: dict[tuple[str, str], str] = {}
        self._metadata: dict[str, Mapping[str, Any]] = {}
        #: Operation ids whose state or metadata changed since the last snapshot segment, in
        #: the order first changed (ADR 0044); ``None`` until a snapshot is written or restored.
        self.touched: dict[str, None] | None = None
        #: Call keys first seen since the last snapshot segment, in order (ADR 0044).
        self._new_calls: list[tuple[str, str]] = []

    def _store(self, operation_id: str, state: ToolOperationState) -> None:
        self._operations[operation_id] = state
        if self.touched is not None:
            self.touched[operation_id] = None

    @classmethod
    def rebuild(
        cls, events: Iterable[RuntimeEvent], metadata: Mapping[str, Mapping[str, Any]] | None = None
    ) -> ToolJournal:
        """Rebuild from scratch (the reopen/rebuild path of the golden-equivalence check)."""
        journal = cls()
        for operation_id, values in (metadata or {}).items():
            journal.apply_metadata(operation_id, values)
        for event in events:
            journal.apply(event)
        return journal

    def get(self, operation_id: str) -> ToolOperationState | None:
        return self._operations.get(operation_id)

    @property
    def operations(self) -> tuple[ToolOperationState, ...]:
        return tuple(self._operations.values())

    def apply_metadata(self, operation_id: str, metadata: Mapping[str, Any]) -> None:
        self._metadata[operation_id] = dict(metadata)
        if self.touched is not None:
            self.touched[operation_id] = None
        existing = self._operations.get(operation_id)
        if existing is not None:
            self._store(operation_id, replace(existing, metadata=dict(metadata)))

    def apply(self, event: RuntimeEvent) -> None:
        """Fold one committed event (events of other lanes are ignored)."""
        call = event.function_call
        if call is not None:
            key = (event.invocation_id, call.id)
            if key not in self._calls:
                self._calls[key] = event.id
                if self.touched is not None:
                    self._new_calls.append(key)
            return
        actions = event.actions
        if actions is not None and actions.tool_dispatch is not None:
            dispatch = actions.tool_dispatch
            if dispatch.operation_id not in self._operations:
                self._store(
                    dispatch.operation_id,
                    ToolOperationState(
                        operation_id=dispatch.operation_id,
                        tool_call_id=dispatch.provider_tool_call_id,
                        tool_name=dispatch.tool_name,
                        canonical_args_hash=dispatch.canonical_args_hash,
                        recovery_mode=dispatch.recovery_mode,
                        state="prepared",
                        call_event_id=self._calls.get(
                            (event.invocation_id, dispatch.provider_tool_call_id)
                        ),
                        dispatch_event_id=event.id,
                        metadata=self._metadata.get(dispatch.operation_id, {}),
                    ),
                )
            return
        response = event.function_response
        if response is not None:
            operation_id = event.refs.operation_id if event.refs is not None else None
            current = self._operations.get(operation_id or "")
            if current is not None and current.result_event_id is None:
                self._store(
                    current.operation_id,
                    replace(
                        current,
                        state="outcome_committed",
                        result_event_id=event.id,
                        version=current.version + 1,
                    ),
                )
            return
        if actions is not None and actions.tool_recovery is not None:
            self._apply_recovery(event)

    def _apply_recovery(self, event: RuntimeEvent) -> None:
        assert event.actions is not None
        assert event.actions.tool_recovery is not None
        fact = event.actions.tool_recovery
        current = self._operations.get(fact.payload.operation_id)
        if current is None:
            return
        if fact.kind == RECONCILE_RESULT_KIND:
            assert isinstance(fact.payload, ReconcileResultPayload)
            self._store(
                current.operation_id,
                replace(current, observation=fact.payload.observation, version=current.version + 1),
            )
            return
        settled: JournalState = (
            "recovery_completed"
            if isinstance(fact.payload, CompletedDecisionPayload)
            else "recovery_parked"
        )
        self._store(
            current.operation_id, replace(current, state=settled, version=current.version + 1)
        )


def expected_journal_state(decision: ToolDecision) -> JournalState | None:
    """The journal state a resolver decision implies for an operation that crossed T1
    (``None``: the decision says the operation never crossed T1 or is corrupt)."""
    if decision.dispatch_runtime_event_id is None:
        return None
    if decision.status == "indeterminate":
        return "prepared"
    if decision.status == "completed":
        return (
            "recovery_completed"
            if decision.settlement_origin == "recovery_bundle"
            else "outcome_committed"
        )
    if decision.status == "parked":
        return "recovery_parked"
    return None


# -- the journal fold as JSON values, and back (ADR 0032) -----------------------------------------

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


def dump_journal(journal: ToolJournal) -> dict[str, Any]:
    """The journal fold as JSON values (its operations, call index and T1 metadata)."""
    return {
        "operations": [
            [getattr(op, name) for name in _OP_FIELDS] for op in journal._operations.values()
        ],
        "calls": [[*key, event_id] for key, event_id in journal._calls.items()],
        "metadata": [[key, dict(values)] for key, values in journal._metadata.items()],
    }


def dump_journal_segment(journal: ToolJournal) -> dict[str, Any]:
    """What changed in the fold since the last snapshot segment (ADR 0044): the operations
    and metadata in ``journal.touched`` (in the order first changed) and the calls first seen
    since; O(the change), never O(the run). :func:`journal_written` clears them once the
    segment is stored."""
    touched = journal.touched or {}
    operations, metadata, calls = journal._operations, journal._metadata, journal._calls
    return {
        "operations": [
            [getattr(operations[key], name) for name in _OP_FIELDS]
            for key in touched
            if key in operations
        ],
        "calls": [[*key, calls[key]] for key in journal._new_calls],
        "metadata": [[key, dict(metadata[key])] for key in touched if key in metadata],
    }


def journal_written(journal: ToolJournal) -> None:
    """The segment of :func:`dump_journal` or :func:`dump_journal_segment` is stored: track
    the change from here."""
    journal.touched = {}
    journal._new_calls = []


def journal_indexes(segment: Mapping[str, Any]) -> dict[str, str]:
    """The CRC-32 index of the keys a journal segment writes, per map (kept in the snapshot
    segment's summary, read with the body: ADR 0044)."""
    return {
        "journalOperations": crc_text(row[0] for row in segment["operations"]),
        "journalCalls": crc_text((row[0], row[1]) for row in segment["calls"]),
        "journalMetadata": crc_text(row[0] for row in segment["metadata"]),
    }


class RestoredJournal:
    """The journal fold of a snapshot's segments, built as the fold looks keys up: each key
    from the segment that last wrote it (:mod:`maka_es.tooljournal.model.segments`); every key, in
    the order first seen (then the keys folded since), on any other use (ADR 0044)."""

    __slots__ = ("_all", "_indexes", "_journal", "_one", "_parsed")

    def __init__(
        self,
        summaries: Sequence[Mapping[str, Any]],
        texts: Callable[[], Sequence[bytes]],
        one: Callable[[int], bytes | None],
    ) -> None:
        self._all, self._one = texts, one
        self._indexes = [
            SegmentIndex([summary[name] for summary in summaries])
            for name in ("journalOperations", "journalCalls", "journalMetadata")
        ]
        self._parsed: dict[int, list[dict[Any, Any]] | None] = {}
        journal = self._journal = ToolJournal()
        journal._operations = LazyMap(lambda key: self._lookup(0, key), self.complete)
        journal._calls = LazyMap(lambda key: self._lookup(1, key), self.complete)
        journal._metadata = LazyMap(lambda key: self._lookup(2, key), self.complete)
        journal_written(journal)

    @property
    def journal(self) -> ToolJournal:
        return self._journal

    def _maps(self) -> tuple[dict[Any, Any], ...]:
        journal = self._journal
        return journal._operations, journal._calls, journal._metadata

    def _segment(self, at: int) -> list[dict[Any, Any]] | None:
        if at not in self._parsed:
            text = self._one(at)
            self._parsed[at] = None if text is None else _entries([json.loads(text)])
        return self._parsed[at]

    def _lookup(self, kind: int, key: Any) -> Any:
        at = self._indexes[kind].segment_of(key)
        if at is None:
            return None  # no segment wrote it
        entries = self._segment(at)
        value = None if entries is None else entries[kind].get(key)
        if value is None:  # a collision, or a part not as stored: build them all
            self.complete()
            return dict.get(self._maps()[kind], key)
        dict.__setitem__(self._maps()[kind], key, value)
        return value

    def complete(self) -> None:
        """Every key of every segment, in the order first seen, then the keys folded since;
        a key already looked up keeps its (maybe changed) value."""
        maps = self._maps()
        for lazy in maps:
            assert isinstance(lazy, LazyMap)
            lazy.completed()
        merged = _entries(json.loads(text) for text in self._all())
        for lazy, older in zip(maps, merged, strict=True):
            current = dict(dict.items(lazy))
            dict.clear(lazy)
            for key, value in older.items():
                dict.__setitem__(lazy, key, current.pop(key, value))
            dict.update(lazy, current)


def _entries(segments: Iterable[Mapping[str, Any]]) -> list[dict[Any, Any]]:
    """The operations, calls and metadata of the segments applied in order: a later row of a
    key replaces the earlier one in place, so the order stays the order first seen, as in the
    fold that wrote them (ADR 0044)."""
    operations: dict[str, ToolOperationState] = {}
    calls: dict[tuple[str, str], str] = {}
    metadata: dict[str, Any] = {}
    for data in segments:
        for row in data["operations"]:
            state = ToolOperationState(**dict(zip(_OP_FIELDS, row, strict=True)))
            operations[state.operation_id] = state
        for invocation, call, event_id in data["calls"]:
            calls[(invocation, call)] = event_id
        for key, values in data["metadata"]:
            metadata[key] = values
    return [operations, calls, metadata]


def restore_journal(data: Mapping[str, Any]) -> ToolJournal:
    """The journal fold :func:`dump_journal` wrote."""
    journal = ToolJournal()
    for row in data["operations"]:
        state = ToolOperationState(**dict(zip(_OP_FIELDS, row, strict=True)))
        journal._operations[state.operation_id] = state
    journal._calls = {(invocation, call): event_id for invocation, call, event_id in data["calls"]}
    journal._metadata = dict(data["metadata"])
    return journal
