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

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from maka_es.tooljournal.resolver import ToolDecision
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

    __slots__ = ("_calls", "_metadata", "_operations", "touched")

    def __init__(self) -> None:
        self._operations: dict[str, ToolOperationState] = {}
        self._calls: dict[tuple[str, str], str] = {}
        self._metadata: dict[str, Mapping[str, Any]] = {}
        #: Operation ids whose state or metadata changed since the last snapshot segment, in
        #: the order first changed (ADR 0044); ``None`` until a snapshot is written or restored.
        self.touched: dict[str, None] | None = None

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
            self._calls.setdefault((event.invocation_id, call.id), event.id)
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


def dump_journal_segment(journal: ToolJournal, calls_written: int) -> dict[str, Any]:
    """What changed in the fold since the last snapshot segment (ADR 0044): the operations
    and metadata in ``journal.touched`` (in the order first changed) and the calls after the
    first ``calls_written``; O(the change), never O(the run). The caller clears ``touched``
    once the segment is stored."""
    touched = journal.touched or {}
    operations, metadata = journal._operations, journal._metadata
    new_calls = len(journal._calls) - calls_written
    calls = list(itertools.islice(reversed(journal._calls.items()), new_calls))[::-1]
    return {
        "operations": [
            [getattr(operations[key], name) for name in _OP_FIELDS]
            for key in touched
            if key in operations
        ],
        "calls": [[*key, event_id] for key, event_id in calls],
        "metadata": [[key, dict(metadata[key])] for key in touched if key in metadata],
    }


def restore_journal_segments(segments: Iterable[Mapping[str, Any]]) -> ToolJournal:
    """The fold the segments describe, applied in order: a later row of an operation or its
    metadata replaces the earlier one in place, so the order stays the order first seen, as
    in the fold that wrote them (ADR 0044)."""
    journal = ToolJournal()
    for data in segments:
        for row in data["operations"]:
            state = ToolOperationState(**dict(zip(_OP_FIELDS, row, strict=True)))
            journal._operations[state.operation_id] = state
        for invocation, call, event_id in data["calls"]:
            journal._calls[(invocation, call)] = event_id
        for key, values in data["metadata"]:
            journal._metadata[key] = values
    journal.touched = {}
    return journal


def restore_journal(data: Mapping[str, Any]) -> ToolJournal:
    """The journal fold :func:`dump_journal` wrote."""
    journal = ToolJournal()
    for row in data["operations"]:
        state = ToolOperationState(**dict(zip(_OP_FIELDS, row, strict=True)))
        journal._operations[state.operation_id] = state
    journal._calls = {(invocation, call): event_id for invocation, call, event_id in data["calls"]}
    journal._metadata = dict(data["metadata"])
    return journal
