"""The Run aggregate's state: an AgentRun header plus its committed RuntimeEvent ledger.

Why the Run is the consistency boundary: every fact of one tool operation lives in one run, so
validating a new fact needs only this run's state, and "one save of the Run" is one store
transaction (ledger.md#streams). State changes only by folding facts that were committed
(:meth:`RunState.apply`), so a failed save can never leave a half-applied aggregate behind; the
commands that decide which facts to save live in the ``run_*`` decider modules and only read
this state.

State is kept incrementally (event-id index, terminal position, canonical payloads, the
resolver's scan and the journal fold), so the cost of validating one append does not grow with
the run's history.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from uuid import UUID

from maka_es.errors import StoreCorruptionError
from maka_es.ledger.facts import (
    OperationAttested,
    RunHeaderUpdated,
    RunOwnerTaken,
    RunSealed,
    RuntimeEventRecorded,
    StoredFact,
    ToolMetadataRecorded,
)
from maka_es.ledger.ownership import RunOwner
from maka_es.ledger.stored_events import read_recorded_event
from maka_es.tooljournal.attestation import OperatorAttestation
from maka_es.tooljournal.operation import ToolJournal, ToolOperationState
from maka_es.tooljournal.resolution import Resolution
from maka_es.tooljournal.resolver import ResolverState
from maka_es.tooljournal.scan_snapshot import PartText, dump_journal, read_part, restore_journal
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.run_header import RunHeader

__all__ = ["HistoryReader", "RunState"]

#: Reads the first ``count`` committed events of the run (event and stored payload, in order)
#: from the ledger: how a state restored from a snapshot gets its older events (ADR 0032).
HistoryReader = Callable[[int], Sequence[tuple[RuntimeEvent, str]]]


class RunState:
    """What a run's committed facts say: header, ledger, seal, resolver scan, journal fold."""

    __slots__ = (
        "_attestations",
        "_events",
        "_head_ids",
        "_history",
        "_journal",
        "_journal_text",
        "_owner",
        "_payloads",
        "_resolver",
        "_sealed_by",
        "_terminal",
        "header",
        "id",
        "version",
    )

    def __init__(
        self, stream_id: UUID, header: RunHeader, version: int, owner: RunOwner | None = None
    ) -> None:
        self.id = stream_id
        self._owner = owner
        self.header = header
        self.version = version
        self._events: list[RuntimeEvent] = []
        self._payloads: list[str] = []
        self._terminal: RuntimeEvent | None = None
        # A state restored from a snapshot keeps only the ids of its older events (ADR 0032):
        # ``_events``/``_payloads`` then hold the events after them, until first asked for.
        self._head_ids: Sequence[str] = []
        self._history: HistoryReader | None = None
        self._attestations: dict[str, OperatorAttestation] = {}
        self._resolver = ResolverState()
        self._sealed_by: str | None = None
        self._journal = ToolJournal()
        #: A snapshot's journal fold, parsed on first use (``_journal_fold``, ADR 0032).
        self._journal_text: PartText | None = None

    # -- queries ---------------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self.header.run_id

    @property
    def events(self) -> tuple[RuntimeEvent, ...]:
        """The committed ledger in order (event_seq = position + 1)."""
        return tuple(self._materialised())

    @property
    def high_water(self) -> int:
        """Number of committed RuntimeEvents (the last event_seq)."""
        return len(self._head_ids) + len(self._events)

    @property
    def terminal_event(self) -> RuntimeEvent | None:
        return self._terminal

    @property
    def owner(self) -> RunOwner | None:
        """The host that owns the run and its epoch (``None``: ownerless; ADR 0021)."""
        return self._owner

    @property
    def sealed_by(self) -> str | None:
        """The continuation claim that sealed this run, if any."""
        return self._sealed_by

    def resolution(self) -> Resolution:
        """The RecoveryResolver's verdict over the committed ledger (kept incrementally)."""
        return self._resolver.resolution()

    @property
    def resolver(self) -> ResolverState:
        """The incremental resolver state (read it; never feed it from outside)."""
        return self._resolver

    @property
    def tool_operations(self) -> tuple[ToolOperationState, ...]:
        """Operations that crossed T1, in T1 order, as the journal fold sees them."""
        return self._journal_fold().operations

    def tool_operation(self, operation_id: str) -> ToolOperationState | None:
        """The journal state of one operation that crossed T1 (``None``: it never did)."""
        return self._journal_fold().get(operation_id)

    @property
    def attestations(self) -> tuple[OperatorAttestation, ...]:
        """Operator attestations of this run's operations, in the order they were committed
        (ADR 0022)."""
        return tuple(self._attestations.values())

    def attestation(self, operation_id: str) -> OperatorAttestation | None:
        """The operator attestation of one operation (``None``: none was recorded)."""
        return self._attestations.get(operation_id)

    def payload_at(self, event_seq: int) -> str:
        """Canonical JSON of the committed event at ``event_seq`` (1-based)."""
        self._materialised()
        return self._payloads[event_seq - 1]

    def committed_payload(self, event_id: str) -> str | None:
        """Canonical JSON of the committed event ``event_id`` (``None``: not committed). Exact
        retries are recognised by comparing these bytes."""
        index = self._resolver.position_of(event_id)
        if index is None:
            return None
        self._materialised()
        return self._payloads[index]

    def committed_event(self, event_id: str) -> RuntimeEvent | None:
        """The committed event ``event_id`` (``None``: not committed)."""
        index = self._resolver.position_of(event_id)
        return None if index is None else self._materialised()[index]

    @property
    def events_in_memory(self) -> bool:
        """Every committed event is held (``False``: restored from a snapshot, ADR 0032)."""
        return not self._head_ids

    def events_newest_first(self) -> Iterator[RuntimeEvent]:
        """The committed events from the last one back; the ones a snapshot left out are read
        from the ledger only if the caller goes past the ones held in memory.

        Why: startup recovery's last-event rule reads a few events from the end of a run that
        may be restored from a snapshot (ADR 0012, ADR 0032)."""
        tail, snapshot_left_some = list(self._events), bool(self._head_ids)
        yield from reversed(tail)
        if snapshot_left_some:
            every = self._materialised()
            yield from reversed(every[: len(every) - len(tail)])

    def attach_history(self, reader: HistoryReader) -> None:
        """Install the ledger reader a snapshot-restored state reads its older events with."""
        self._history = reader
        self._resolver.event_at = self._event_at

    def _journal_fold(self) -> ToolJournal:
        text = self._journal_text
        if text is not None:
            self._journal_text = None
            self._journal = restore_journal(json.loads(read_part(text)))
        return self._journal

    def journal_text(self) -> str:
        """The journal fold as the JSON text a snapshot stores (unparsed if still unparsed)."""
        text = self._journal_text
        if text is not None:
            return read_part(text).decode()
        return json.dumps(dump_journal(self._journal), separators=(",", ":"))

    def _event_at(self, position: int) -> RuntimeEvent:
        return self._materialised()[position]

    def _materialised(self) -> list[RuntimeEvent]:
        """Every committed event, reading the ones a snapshot left out from the ledger first.

        The events read must be exactly the ones the snapshot recorded, by id and order; a
        ledger that disagrees is a ``StoreCorruptionError`` (never a silently mixed state)."""
        head = self._head_ids
        if not head:
            return self._events
        if self._history is None:
            raise StoreCorruptionError(f"run {self.run_id}: no ledger reader for its history")
        rows = self._history(len(head))
        if [event.id for event, _ in rows] != head:
            raise StoreCorruptionError(
                f"run {self.run_id}: the ledger's first {len(head)} events are not the ones "
                "its snapshot recorded"
            )
        self._events[:0] = [event for event, _ in rows]
        self._payloads[:0] = [payload for _, payload in rows]
        self._head_ids = []
        return self._events

    def header_after(self, fact: RunHeaderUpdated) -> RunHeader:
        """The header once ``fact`` is folded: what a header command answers after its commit
        without reading the store again (a failed read after a durable commit would report
        ``store_unavailable`` for a command that was saved)."""
        return RunHeader.model_validate({**self.header.to_wire(), **fact.patch})

    # -- evolution --------------------------------------------------------------------------------

    def apply(self, fact: StoredFact) -> None:
        """Fold one committed fact into the state (used only for committed facts)."""
        if fact.originator_version != self.version + 1:
            raise StoreCorruptionError(
                f"run stream {self.id} jumps from version {self.version} to "
                f"{fact.originator_version}"
            )
        if isinstance(fact, RuntimeEventRecorded):
            self._record(fact)
        elif isinstance(fact, RunSealed):
            self._sealed_by = fact.claim_id
        elif isinstance(fact, ToolMetadataRecorded):
            self._journal_fold().apply_metadata(fact.operation_id, fact.metadata)
        elif isinstance(fact, OperationAttested):
            self._attestations[fact.operation_id] = _attestation(fact)
        elif isinstance(fact, RunHeaderUpdated):
            self.header = self.header_after(fact)
        elif isinstance(fact, RunOwnerTaken) and self._owner is not None:
            self._owner = self._owner.taken_over(fact)
        else:
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in run stream")
        self.version = fact.originator_version

    def _record(self, fact: RuntimeEventRecorded) -> None:
        if fact.event_seq != self.high_water + 1:
            raise StoreCorruptionError(
                f"run {self.run_id}: event_seq {fact.event_seq} after {self.high_water}"
            )
        # A fact this process decided carries its validated event, which the write-time checks
        # just judged (ADR 0026); one read from the store is parsed from its payload, and is
        # verified when its bytes match their digest (ADR 0025).
        decided = fact.decided_event
        event, verified = (decided, True) if decided is not None else read_recorded_event(fact)
        self._events.append(event)
        self._payloads.append(fact.payload)
        self._resolver.feed(event, verified=verified)
        if _touches_journal(event):  # other lanes leave the fold (and a snapshot's text) alone
            self._journal_fold().apply(event)
        if event.is_terminal and self._terminal is None:
            self._terminal = event


def _touches_journal(event: RuntimeEvent) -> bool:
    """The event is of a lane the journal fold reads (``ToolJournal.apply`` ignores others)."""
    actions = event.actions
    return (
        event.function_call is not None
        or event.function_response is not None
        or (
            actions is not None
            and (actions.tool_dispatch is not None or actions.tool_recovery is not None)
        )
    )


def _attestation(fact: OperationAttested) -> OperatorAttestation:
    return OperatorAttestation(
        operation_id=fact.operation_id,
        applied=fact.applied,
        result=fact.result,
        actor=fact.actor,
        note=fact.note,
        attested_at=int(fact.attested_at),
        response_event_id=fact.response_event_id,
    )
