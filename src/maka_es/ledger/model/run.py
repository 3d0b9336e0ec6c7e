"""The Run aggregate: an AgentRun header and its committed RuntimeEvent ledger, folded, with the
commands that decide its next facts.

Why the Run is the consistency boundary: every fact of one tool operation lives in one run, so
validating a new fact needs only this run's state, and "one save of the Run" is one store
transaction (ledger.md#streams). Commands are *pure*: they validate against the current state
and return the facts to save. State changes only by folding committed facts (:meth:`Run.apply`),
so a failed save never leaves a half-applied aggregate; it is kept incrementally (event-id
index, terminal, payloads, the resolver's scan, the journal fold), so validating one append
does not grow with the run's history. The commands (append, header, seal, claim-repair start,
T1, T2, recovery bundle, attestation) share the write rules below the class: what an exact
retry is, which identity an event must carry, when the run is sealed (ledger.md#write-rules).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from maka_es.errors import (
    EventIdConflictError,
    EventIdentityMismatchError,
    HeaderUpdateRefusedError,
    InvalidRunHeaderError,
    PartialEventRefusedError,
    RecoveryBundleRejectedError,
    ReservedFactError,
    RunSealedError,
    RuntimeOffsetMismatchError,
    StoreCorruptionError,
    TerminalConflictError,
    ToolLedgerCorruptionError,
    ToolLedgerRejectionError,
    ToolOperationConflictError,
    ToolOperationNotFoundError,
    ToolOperationSettledError,
    ToolOutcomeConflictError,
)
from maka_es.ledger.model.facts import (
    OperationAttested,
    RunCreated,
    RunHeaderUpdated,
    RunOwnerTaken,
    RunSealed,
    RuntimeEventRecorded,
    StoredFact,
    ToolMetadataRecorded,
    payload_digest_of,
    read_recorded_event,
    run_stream_id,
)
from maka_es.ledger.model.ownership import RunOwner
from maka_es.tooljournal.model.attestation import OperatorAttestation, attested_response
from maka_es.tooljournal.model.bundle import BundleCode, BundleFacts, first_bundle_problem
from maka_es.tooljournal.model.operation import (
    ToolJournal,
    ToolOperationState,
)
from maka_es.tooljournal.model.resolver import Resolution, ResolverState
from maka_es.tooljournal.model.scanner import ResolverIssue
from maka_es.wire.codec import canonical_json, canonical_payload, operation_id_for
from maka_es.wire.events import RuntimeEvent
from maka_es.wire.facts import dispatch_fact
from maka_es.wire.run_header import (
    MUTABLE_HEADER_FIELDS,
    ContinuationSourceV2,
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)

__all__ = [
    "AppendDecision",
    "HistoryReader",
    "Run",
    "ToolCommandDecision",
    "project_run",
]

#: Reads the first ``count`` committed events of the run (event and stored payload, in order)
#: from the ledger: how a state restored from a snapshot gets its older events (ADR 0032).
HistoryReader = Callable[[int], Sequence[tuple[RuntimeEvent, str]]]
EventReader = Callable[[int], tuple[RuntimeEvent, str]]  # one, by position (ADR 0044)


@dataclass(frozen=True, slots=True)
class AppendDecision:
    """What an append would do: the facts to save, how many events were exact retries, and
    the run's high-water once they are saved (decided with them: the result of the command,
    never read back from an aggregate after the commit)."""

    facts: tuple[StoredFact, ...]
    appended: tuple[RuntimeEvent, ...]
    retried: int
    high_water: int


@dataclass(frozen=True, slots=True)
class ToolCommandDecision:
    """Facts of a T1 / T2 / recovery-bundle command; ``created=False`` for an exact retry."""

    facts: tuple[StoredFact, ...]
    operation_id: str
    created: bool


class Run:
    """Event-sourced Run: what its committed facts say (header, ledger, seal, resolver scan,
    journal fold) and the commands that decide its next facts. Build with :meth:`create` (new)
    or :func:`project_run` (replay)."""

    __slots__ = (
        "_attestations",
        "_events",
        "_history",
        "_history_at",
        "_journal",
        "_journal_pending",
        "_owner",
        "_payloads",
        "_resolver",
        "_sealed_by",
        "_snapshot_ids",
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
        self._snapshot_ids: Sequence[str] = []
        self._history: HistoryReader | None = None
        self._history_at: EventReader | None = None
        self._attestations: dict[str, OperatorAttestation] = {}
        self._resolver = ResolverState()
        self._sealed_by: str | None = None
        self._journal = ToolJournal()
        #: A snapshot's journal fold, parsed on first use (``_journal_fold``, ADR 0032, 0044).
        self._journal_pending: Callable[[], ToolJournal] | None = None

    # -- creation ---------------------------------------------------------------------------------

    @staticmethod
    def create(header: RunHeader, created_at: float, owner: RunOwner | None = None) -> RunCreated:
        """The fact that creates a run, owned by ``owner`` (ADR 0021). The header must be
        non-terminal: a terminal header is only ever derived from a durable terminal
        RuntimeEvent."""
        if header.is_terminal:
            raise InvalidRunHeaderError(
                "a run is created non-terminal; its terminal status follows its terminal event",
                field="status",
            )
        if header.invocation_id is None:
            raise InvalidRunHeaderError(
                "a run created through the store needs its invocationId", field="invocationId"
            )
        return RunCreated(
            originator_id=run_stream_id(header.run_id),
            originator_version=1,
            header=header.to_wire(),
            created_at=created_at,
            owner=None if owner is None else owner.to_json(),
        )

    @staticmethod
    def create_continuation(
        header: RunHeader,
        start: RuntimeEvent,
        *,
        created_at: float,
        admitted: bool = False,
        owner: RunOwner | None = None,
    ) -> tuple[StoredFact, ...]:
        """The target Run of a continuation: created with its continuation-start fact as event
        1 (the generic path refuses start facts; this is their only writer;
        continuation.md#start-fact).

        ``admitted``: the start admits the run to execution, so the header records
        ``running`` (``updatedAt`` = the start's ``ts``) in the same save. A reader of the
        header can then tell an admitted run from a merely claimed one (still ``created``);
        a claim-repair start never runs anything and leaves the header ``created``.
        """
        if start.actions is None or start.actions.continuation_start is None:
            raise ReservedFactError(
                f"event {start.id} is not a continuation-start fact",
                detail={"eventId": start.id},
            )
        created = Run.create(header, created_at, owner)
        run = Run(created.originator_id, RunHeader.model_validate(created.header), 1)
        decision = _event_facts(run, [start], created_at)
        _check_tool_ledger(run, decision.appended)
        if not admitted:
            return (created, *decision.facts)
        for fact in decision.facts:
            run.apply(fact)
        running = run.decide_header_update(
            {"status": "running", "updatedAt": start.ts}, updated_at=created_at
        )
        return (created, *decision.facts, running)

    # -- queries ----------------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self.header.run_id

    @property
    def events(self) -> tuple[RuntimeEvent, ...]:
        """The committed ledger in order (event_seq = position + 1)."""
        return tuple(self._materialised())

    def events_after(self, count: int) -> list[RuntimeEvent]:
        """The committed events after the first ``count``, for a reader that holds those: the
        ones a snapshot left out are read from the ledger only when they are asked for."""
        left_out = len(self._snapshot_ids)
        if count >= left_out:
            return self._events[count - left_out :]
        return self._materialised()[count:]

    @property
    def high_water(self) -> int:
        """Number of committed RuntimeEvents (the last event_seq)."""
        return len(self._snapshot_ids) + len(self._events)

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
        return None if index is None else self._committed(index)[1]

    def committed_event(self, event_id: str) -> RuntimeEvent | None:
        """The committed event ``event_id`` (``None``: not committed)."""
        index = self._resolver.position_of(event_id)
        return None if index is None else self._committed(index)[0]

    def _committed(self, index: int) -> tuple[RuntimeEvent, str]:
        """Event ``index`` and its payload; a restored run reads an older one alone (ADR 0044)."""
        ids = self._snapshot_ids
        if index < len(ids) and self._history_at is not None:
            event, payload = self._history_at(index)
            if event.id != ids[index]:
                raise StoreCorruptionError(f"run {self.run_id}: event {index + 1} changed")
            return event, payload
        if index < len(ids):
            self._materialised()  # every event is held from now on
        at = index - len(self._snapshot_ids)
        return self._events[at], self._payloads[at]

    @property
    def events_in_memory(self) -> bool:
        """Every committed event is held (``False``: restored from a snapshot, ADR 0032)."""
        return not self._snapshot_ids

    def events_newest_first(self) -> Iterator[RuntimeEvent]:
        """The committed events from the last one back; the ones a snapshot left out are read
        from the ledger only if the caller goes past the ones held in memory.

        Why: startup recovery's last-event rule reads a few events from the end of a run that
        may be restored from a snapshot (ADR 0012, ADR 0032)."""
        tail, snapshot_left_some = list(self._events), bool(self._snapshot_ids)
        yield from reversed(tail)
        if snapshot_left_some:
            every = self._materialised()
            yield from reversed(every[: len(every) - len(tail)])

    def attach_history(self, reader: HistoryReader, one: EventReader | None = None) -> None:
        """Install the readers of a restored state's older events: all, or one (ADR 0044)."""
        self._history = reader
        self._history_at = one
        self._resolver.event_at = lambda position: self._committed(position)[0]

    def _journal_fold(self) -> ToolJournal:
        pending = self._journal_pending
        if pending is not None:
            self._journal_pending = None
            self._journal = pending()
        return self._journal

    def _materialised(self) -> list[RuntimeEvent]:
        """Every committed event, reading the ones a snapshot left out from the ledger first.

        The events read must be exactly the ones the snapshot recorded, by id and order; a
        ledger that disagrees is a ``StoreCorruptionError`` (never a silently mixed state)."""
        ids = self._snapshot_ids
        if not ids:
            return self._events
        if self._history is None:
            raise StoreCorruptionError(f"run {self.run_id}: no ledger reader for its history")
        rows = self._history(len(ids))
        if [event.id for event, _ in rows] != ids:
            raise StoreCorruptionError(
                f"run {self.run_id}: the ledger's first {len(ids)} events are not the ones "
                "its snapshot recorded"
            )
        self._events[:0] = [event for event, _ in rows]
        self._payloads[:0] = [payload for _, payload in rows]
        self._snapshot_ids = []
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

    # -- commands: ledger, header, continuation (ledger.md#write-rules) ---------------------------

    def decide_append(
        self,
        events: Sequence[RuntimeEvent],
        *,
        committed_at: float,
        expected_high_water: int | None = None,
    ) -> AppendDecision:
        """Validate a generic batch and return the facts that commit it (all or nothing).

        Reserved facts (dispatch, operation-bound responses, recovery facts, continuation
        starts, workspace facts) have their own commands and are refused here; tool-bearing
        events must not introduce a RecoveryResolver issue.
        """
        _check_high_water(self, expected_high_water)
        decision = _event_facts(self, events, committed_at)
        for event in decision.appended:
            reason = _reserved_reason(event)
            if reason is not None:
                raise ReservedFactError(
                    f"event {event.id}: {reason} is written only by its own store command",
                    detail={"eventId": event.id, "fact": reason},
                )
        _check_tool_ledger(self, decision.appended)
        return decision

    def decide_header_update(
        self, patch: Mapping[str, Any], *, updated_at: float
    ) -> RunHeaderUpdated:
        """Validate a header patch: only mutable fields; terminal only after the terminal event
        is durable and matches it; a terminal header that its durable terminal fact backs never
        changes again.

        A terminal header that NO durable fact backs (another writer or an old store wrote it
        without its terminal event) is not authority: once recovery has made a terminal fact
        durable, the header may be corrected to that fact, and to nothing else.
        """
        illegal = sorted(set(patch) - MUTABLE_HEADER_FIELDS)
        if illegal:
            raise HeaderUpdateRefusedError(
                f"header fields are immutable after creation: {', '.join(illegal)}",
                detail={"fields": illegal},
            )
        already_terminal = HeaderUpdateRefusedError(
            f"run {self.run_id} header is already terminal ({self.header.status})",
            detail={"status": self.header.status},
        )
        if self.header.is_terminal and _header_backed_by_terminal(self):
            raise already_terminal
        candidate = RunHeader.model_validate({**self.header.to_wire(), **patch})
        if self.header.is_terminal and not candidate.is_terminal:
            raise already_terminal
        if candidate.is_terminal:
            _check_terminal_header(self, candidate)
        return RunHeaderUpdated(
            originator_id=self.id,
            originator_version=self.version + 1,
            patch=dict(patch),
            updated_at=updated_at,
        )

    def decide_seal(self, claim_id: str, *, sealed_at: float) -> RunSealed:
        """Seal this run as a continuation source, at its current version: if the run changed
        after it was read, the claim's save conflicts and nothing of the claim is written."""
        if self.sealed_by is not None:
            raise RunSealedError(
                f"run {self.run_id} is already the source of claim {self.sealed_by}",
                detail={"claimId": self.sealed_by},
            )
        return RunSealed(
            originator_id=self.id,
            originator_version=self.version + 1,
            claim_id=claim_id,
            sealed_at=sealed_at,
        )

    def decide_claim_repair_start(
        self, start: RuntimeEvent, *, committed_at: float
    ) -> AppendDecision:
        """Event 1 of a claimed continuation target that was created but never started: the
        claim-repair start (continuation.md#claim-repair). Only an empty run whose
        ``continuationSource`` names the start's claim takes it; an exact retry is a no-op."""
        fact = start.actions.continuation_start if start.actions is not None else None
        source = self.header.continuation_source
        if (
            fact is None
            or fact.provenance != "claim_repair"
            or not isinstance(source, ContinuationSourceV2)
            or source.claim_id != fact.claim_id
        ):
            raise ReservedFactError(
                f"event {start.id} is not the claim-repair start of run {self.run_id}'s claim",
                detail={"eventId": start.id, "fact": "continuationStart"},
            )
        decision = _event_facts(self, [start], committed_at)
        if decision.appended and self.high_water != 0:
            raise ReservedFactError(
                f"run {self.run_id} already started; a repair start must be its first event",
                detail={"eventId": start.id, "fact": "continuationStart"},
            )
        _check_tool_ledger(self, decision.appended)
        return decision

    # -- commands: tool journal (T1, T2, recovery bundle, attestation) ----------------------------

    def decide_tool_prepared(
        self,
        call: RuntimeEvent,
        *,
        recovery_mode: str,
        committed_at: float,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommandDecision:
        """T1 (tool-journal.md#t1): the call (unless the identical call is already committed), the
        dispatch fact ``<op>_dispatch`` with the args hash recomputed from the call, and the tool's
        metadata, in one transaction. An identical T1 that already committed returns
        ``created=False``: another dispatcher owns the operation and the tool must not run again.
        ``metadata`` must be strict JSON (``non_strict_json`` otherwise: no NaN, no lone
        surrogates)."""
        if metadata:
            canonical_json(dict(metadata))
        content = call.function_call
        if content is None:
            raise ToolLedgerRejectionError(
                f"event {call.id} is not a function_call",
                code="semantic_lane_conflict",
                detail={"eventId": call.id},
            )
        operation_id = operation_id_for(call.invocation_id, content.id)
        args_hash = self.resolver.args_hash_of(content)
        dispatch = dispatch_fact(call, operation_id, recovery_mode, args_hash=args_hash)
        _require_healthy_tool_ledger(self)
        if self.tool_operation(operation_id) is not None:
            if _all_committed(self, (call, dispatch)):
                return ToolCommandDecision((), operation_id, created=False)
            raise ToolOperationConflictError(
                f"operation {operation_id} was already prepared with other facts",
                detail={"operationId": operation_id},
            )
        decision = _event_facts(self, [call, dispatch], committed_at)
        _check_tool_ledger(self, decision.appended)
        facts: list[StoredFact] = list(decision.facts)
        if metadata:
            facts.append(
                ToolMetadataRecorded(
                    originator_id=self.id,
                    originator_version=self.version + len(facts) + 1,
                    operation_id=operation_id,
                    metadata=dict(metadata),
                )
            )
        return ToolCommandDecision(tuple(facts), operation_id, created=True)

    def decide_tool_outcome(
        self, response: RuntimeEvent, *, committed_at: float
    ) -> ToolCommandDecision:
        """T2 (tool-journal.md#t2): the response bound to its operation (``refs.operationId``,
        ``refs.toolCallId``). An exact retry returns ``created=False``; a different second outcome
        is refused."""
        _require_healthy_tool_ledger(self)
        operation = _bound_operation(self, response)
        if operation.result_event_id is not None or operation.state != "prepared":
            if _all_committed(self, (response,)):
                return ToolCommandDecision((), operation.operation_id, created=False)
            error = (
                ToolOutcomeConflictError
                if operation.state == "outcome_committed"
                else ToolOperationSettledError
            )
            raise error(
                f"operation {operation.operation_id} is already {operation.state}",
                detail={"operationId": operation.operation_id, "state": operation.state},
            )
        decision = _event_facts(self, [response], committed_at)
        _check_tool_ledger(self, decision.appended)
        return ToolCommandDecision(decision.facts, operation.operation_id, created=True)

    def decide_recovery_bundle(
        self,
        operation_id: str,
        reconcile: RuntimeEvent,
        decision_event: RuntimeEvent,
        outcome: RuntimeEvent | None,
        *,
        committed_at: float,
    ) -> ToolCommandDecision:
        """Reconcile fact, optional outcome and decision in one transaction
        (tool-journal.md#bundles). Only an operation with a durable dispatch and no outcome can
        be settled this way; parked is final (only an exact retry of the same bundle succeeds).
        The refusal order is the one of tool-journal.md#bundle-codes: known, fail-stop, settled,
        fresh ids, the bundle validator's pre-scan checks, the scanner, then the validator's
        full reading of the prospective ledger."""
        operation = self.tool_operation(operation_id)
        if operation is None:
            raise ToolOperationNotFoundError(
                f"run {self.run_id} has no prepared operation {operation_id}",
                detail={"operationId": operation_id},
            )
        _require_healthy_tool_ledger(self)
        bundle = (reconcile, *((outcome,) if outcome is not None else ()), decision_event)
        if operation.state != "prepared":
            if _all_committed(self, bundle):
                return ToolCommandDecision((), operation_id, created=False)
            raise ToolOperationSettledError(
                f"operation {operation_id} is already {operation.state}",
                detail={"operationId": operation_id, "state": operation.state},
            )
        decision = _event_facts(self, bundle, committed_at)
        if len(decision.appended) != len(bundle):
            raise _bundle_refused(
                operation_id, "recovery_fact_identity_conflict", "it reuses committed event ids"
            )
        declared = _declared_bundle(self, operation, reconcile, decision_event, outcome)
        code = first_bundle_problem(declared, stage="declared")
        if code is not None:
            raise _bundle_refused(operation_id, code)
        issues, interpretation = self.resolver.prospect(
            bundle, lambda state: state.bundle_interpretation(operation_id)
        )
        if issues:
            raise _refuse_issue(issues[0])
        if interpretation is None or interpretation.kind != "valid":
            code = interpretation.code if interpretation is not None else None
            raise _bundle_refused(operation_id, code or "recovery_fact_shape_conflict")
        return ToolCommandDecision(decision.facts, operation_id, created=True)

    def decide_attestation(
        self, attestation: OperatorAttestation, *, committed_at: float
    ) -> ToolCommandDecision:
        """Commit ``attestation`` of an indeterminate operation: the T2 response carrying the
        attested outcome, then the ``OperationAttested`` provenance fact, in one save at the
        Run's next version (ADR 0022): of two attesters racing from one state only one save
        lands; the loser, retried, finds the committed attestation.

        Refusals, in order: a corrupt ledger (``tool_ledger_corruption``), an operation that never
        crossed T1 (``tool_operation_not_found``), an operation already attested
        (``created=False`` for the same decision, else ``operator_attestation_conflict``), an
        operation that is not indeterminate (``operation_not_attestable``), then the write rules
        (a run sealed by its terminal or a claim: ``run_sealed``)."""
        _require_healthy_tool_ledger(self)
        operation_id = attestation.operation_id
        operation = self.tool_operation(operation_id)
        if operation is None:
            raise ToolOperationNotFoundError(
                f"run {self.run_id} has no prepared operation {operation_id}",
                detail={"operationId": operation_id},
            )
        committed = self.attestation(operation_id)
        if committed is not None:
            if committed.same_decision(attestation):
                return ToolCommandDecision((), operation_id, created=False)
            raise ToolOutcomeConflictError(
                f"operation {operation_id} was already attested by {committed.actor}",
                code="operator_attestation_conflict",
                detail={"operationId": operation_id, "actor": committed.actor},
            )
        call = (
            None
            if operation.call_event_id is None
            else self.committed_event(operation.call_event_id)
        )
        if not operation.is_unsettled or call is None:
            raise ToolOperationSettledError(
                f"operation {operation_id} is {operation.state}, not indeterminate",
                code="operation_not_attestable",
                detail={"operationId": operation_id, "state": operation.state},
            )
        response = RuntimeEvent.model_validate(attested_response(call, operation, attestation))
        _require_unsealed(self, operation_id, response.id)
        decision = _event_facts(self, [response], committed_at)
        _check_tool_ledger(self, decision.appended)
        provenance = OperationAttested(
            originator_id=self.id,
            originator_version=self.version + len(decision.facts) + 1,
            operation_id=operation_id,
            applied=attestation.applied,
            result=attestation.result,
            actor=attestation.actor,
            note=attestation.note,
            attested_at=attestation.attested_at,
            response_event_id=attestation.response_event_id,
        )
        facts: tuple[StoredFact, ...] = (*decision.facts, provenance)
        return ToolCommandDecision(facts, operation_id, created=True)


def project_run(run: Run | None, facts: Iterable[Any]) -> Run | None:
    """eventsourcing projector: fold facts into a Run (``None`` until ``RunCreated``)."""
    for fact in facts:
        if run is None:
            if not isinstance(fact, RunCreated):
                raise StoreCorruptionError(f"run stream starts with {type(fact).__name__}")
            header = RunHeader.model_validate(fact.header)
            run = Run(fact.originator_id, header, 1, RunOwner.from_json(fact.owner))
        else:
            run.apply(fact)
    return run


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


# -- write rules every append obeys (ledger.md#write-rules) ---------------------------------------


def _reserved_reason(event: RuntimeEvent) -> str | None:
    """Why a generic append may not carry this event (``None``: it may)."""
    actions = event.actions
    if actions is not None:
        if actions.tool_dispatch is not None:
            return "toolDispatch"
        if actions.tool_recovery is not None:
            return "toolRecovery"
        if actions.continuation_start is not None:
            return "continuationStart"
        if actions.workspace_fact is not None:
            return "workspaceFact"
    if (
        event.function_response is not None
        and event.refs is not None
        and event.refs.operation_id is not None
    ):
        return "operation-bound function_response"
    return None


def _check_high_water(run: Run, expected_high_water: int | None) -> None:
    """An append that names the high-water it was planned against fails if the run moved."""
    if expected_high_water is not None and expected_high_water != run.high_water:
        raise RuntimeOffsetMismatchError(
            f"expected high-water {expected_high_water}, run {run.run_id} has {run.high_water}",
            detail={
                "expectedRuntimeEventHighWater": expected_high_water,
                "actualRuntimeEventHighWater": run.high_water,
            },
        )


def _require_healthy_tool_ledger(run: Run) -> None:
    """Fail-stop (tool-journal.md#fail-stop): once the ledger holds a resolver issue, no tool
    write (not even an exact retry) is acknowledged, because the ledger can no longer prove
    what happened."""
    if run.resolver.has_issues:
        first = run.resolver.issues[0]
        raise ToolLedgerCorruptionError(
            f"run {run.run_id} already holds tool-ledger corruption ({first.code} at "
            f"{first.event_id}); tool-bearing writes are refused",
            detail={"issueCode": first.code, "eventId": first.event_id},
        )


def _refuse_issue(issue: ResolverIssue) -> ToolLedgerRejectionError:
    """The refusal of a write that would introduce ``issue`` (its code is the issue's)."""
    return ToolLedgerRejectionError(
        f"event {issue.event_id} would introduce {issue.code}",
        code=issue.code,
        detail={"eventId": issue.event_id, "issueCode": issue.code},
    )


def _check_tool_ledger(run: Run, events: Sequence[RuntimeEvent]) -> None:
    """Fail-stop on a corrupt ledger; refuse a batch that would introduce an issue."""
    touches_tools = any(
        run.resolver.lane_of(e).is_tool_lane or e.protocol_marker is not None for e in events
    )
    if not touches_tools:
        return
    _require_healthy_tool_ledger(run)
    issues = run.resolver.issues_if_fed(events)
    if issues:
        raise _refuse_issue(issues[0])


def _event_facts(run: Run, events: Sequence[RuntimeEvent], committed_at: float) -> AppendDecision:
    """Envelope rules shared by every write: exact retries are skipped; identity, partial
    and sealing are checked; new events become ``RuntimeEventRecorded`` facts."""
    facts: list[StoredFact] = []
    appended: list[RuntimeEvent] = []
    retried = 0
    batch_ids: dict[str, str] = {}
    terminal_seen = run.terminal_event is not None
    for event in events:
        payload, plain = canonical_payload(event)
        if _is_exact_retry(run, event, payload, batch_ids):
            retried += 1
            continue
        _check_writable(run, event, terminal_seen)
        terminal_seen = event.is_terminal
        batch_ids[event.id] = payload
        appended.append(event)
        fact = RuntimeEventRecorded.decided(
            run.id,
            run.version + len(facts) + 1,
            run.high_water + len(facts) + 1,
            event.id,
            payload,
            committed_at,
            payload_digest_of(payload),
        )
        facts.append(fact.with_decided_event(event) if plain else fact)
    return AppendDecision(tuple(facts), tuple(appended), retried, run.high_water + len(appended))


def _is_exact_retry(run: Run, event: RuntimeEvent, payload: str, batch: Mapping[str, str]) -> bool:
    existing = batch.get(event.id)
    if existing is None:
        existing = run.committed_payload(event.id)
    if existing is None:
        return False
    if existing != payload:
        raise EventIdConflictError(
            f"event id {event.id} is already committed with different content",
            detail={"eventId": event.id},
        )
    return True


def _check_writable(run: Run, event: RuntimeEvent, terminal_seen: bool) -> None:
    """A new event must carry the run's identity, be complete, and find the run unsealed."""
    _check_identity(run, event)
    if event.partial:
        raise PartialEventRefusedError(
            f"event {event.id} is partial; streaming chunks are never committed facts",
            detail={"eventId": event.id},
        )
    if run.sealed_by is not None:
        raise RunSealedError(
            f"run {run.run_id} is the source of continuation claim {run.sealed_by}; "
            f"{event.id} refused",
            detail={"eventId": event.id, "claimId": run.sealed_by},
        )
    if terminal_seen:
        if event.is_terminal:
            raise TerminalConflictError(
                f"run {run.run_id} already has a terminal event; {event.id} is a second",
                detail={"eventId": event.id},
            )
        raise RunSealedError(
            f"run {run.run_id} is sealed by its terminal event; {event.id} refused",
            detail={"eventId": event.id},
        )


def _check_identity(run: Run, event: RuntimeEvent) -> None:
    header = run.header
    expected = {
        "sessionId": header.session_id,
        "runId": header.run_id,
        "turnId": header.turn_id,
        "invocationId": header.invocation_id,
    }
    actual = {
        "sessionId": event.session_id,
        "runId": event.run_id,
        "turnId": event.turn_id,
        "invocationId": event.invocation_id,
    }
    wrong = sorted(k for k, v in expected.items() if v is not None and actual[k] != v)
    if wrong:
        raise EventIdentityMismatchError(
            f"event {event.id} does not belong to run {run.run_id}: {', '.join(wrong)} differ",
            detail={"eventId": event.id, "fields": wrong},
        )


# -- header rules (ledger.md#header-rules) --------------------------------------------------------


def _header_backed_by_terminal(run: Run) -> bool:
    terminal = run.terminal_event
    return terminal is not None and header_matches_terminal(run.header, terminal)


def _check_terminal_header(run: Run, candidate: RunHeader) -> None:
    """A terminal header needs a durable terminal event, and must say what it says."""
    terminal = run.terminal_event
    if terminal is None:
        raise TerminalConflictError(
            f"run {run.run_id}: a terminal header needs a durable terminal event first",
            detail={"status": candidate.status},
        )
    if not header_matches_terminal(candidate, terminal):
        raise TerminalConflictError(
            f"run {run.run_id}: header {candidate.status} does not match terminal event "
            f"{terminal.id} ({run_status_for_terminal_event(terminal)})",
            detail={"status": candidate.status, "eventId": terminal.id},
        )


# -- tool-journal rules (tool-journal.md#t1-t2) ---------------------------------------------------


def _declared_bundle(
    run: Run,
    operation: ToolOperationState,
    reconcile: RuntimeEvent,
    decision: RuntimeEvent,
    outcome: RuntimeEvent | None,
) -> BundleFacts:
    """The bundle as the caller declared it, attached to the operation's committed facts."""
    dispatch = run.committed_event(operation.dispatch_event_id)
    assert dispatch is not None  # the journal only knows operations whose dispatch committed
    return BundleFacts(
        operation_id=operation.operation_id,
        tool_call_id=operation.tool_call_id,
        tool_name=operation.tool_name,
        call=run.committed_event(operation.call_event_id or ""),
        dispatch=dispatch,
        reconcile=reconcile,
        decision=decision,
        outcome=outcome,
    )


def _bundle_refused(
    operation_id: str, code: BundleCode, why: str | None = None
) -> RecoveryBundleRejectedError:
    return RecoveryBundleRejectedError(
        f"recovery bundle for {operation_id} is invalid: {code}" + (f" ({why})" if why else ""),
        code=code,
        detail={"operationId": operation_id},
    )


def _all_committed(run: Run, events: tuple[RuntimeEvent, ...]) -> bool:
    """Every event is already committed byte-identically: the command is an exact retry."""
    return all(run.committed_payload(e.id) == canonical_json(e) for e in events)


def _bound_operation(run: Run, response: RuntimeEvent) -> ToolOperationState:
    content = response.function_response
    refs = response.refs
    if content is None or refs is None or refs.operation_id is None:
        raise ToolLedgerRejectionError(
            f"event {response.id} is not a function_response bound to an operation",
            code="identity_conflict",
            detail={"eventId": response.id},
        )
    if refs.tool_call_id != content.id:
        raise ToolLedgerRejectionError(
            f"event {response.id}: refs.toolCallId must equal the response id",
            code="identity_conflict",
            detail={"eventId": response.id},
        )
    operation = run.tool_operation(refs.operation_id)
    if operation is None:
        raise ToolOperationNotFoundError(
            f"run {run.run_id} has no prepared operation {refs.operation_id}",
            detail={"operationId": refs.operation_id, "eventId": response.id},
        )
    return operation


def _require_unsealed(run: Run, operation_id: str, response_id: str) -> None:
    """``run_sealed`` with the way on: a run ended before its operation was attested (a store
    recovered before ADR 0019's amendment of 2026-12-01 sealed such runs) takes no T2 any more,
    and history is never rewritten, so the operator forks it before the operation."""
    if run.sealed_by is None and run.terminal_event is None:
        return
    detail = {"eventId": response_id, "operationId": operation_id, "wayOn": "fork_run"}
    if run.sealed_by is not None:
        detail["claimId"] = run.sealed_by
    raise RunSealedError(
        f"run {run.run_id} was sealed before operation {operation_id} was attested; history is "
        "never rewritten, so fork it before the operation (fork_run, `maka-es fork RUN "
        "--before OP`) to go on",
        detail=detail,
    )
