"""Run aggregate: an AgentRun header plus its committed RuntimeEvent ledger.

Why the Run is the consistency boundary: every fact of one tool operation lives in one run, so
validating a new fact needs only this run's state, and "one save of the Run" is one store
transaction. Commands here are *pure*: they validate against the current state and return the
facts to save, without mutating the aggregate. State changes only by folding facts that were
committed (``apply``), so a failed save can never leave a half-applied aggregate behind.

State is kept incrementally (event-id index, terminal position, canonical payloads), so the cost
of validating one append does not grow with the run's history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
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
from maka_es.ledger.facts import (
    InvocationBound,
    RunCreated,
    RunHeaderUpdated,
    RunSealed,
    RuntimeEventRecorded,
    StoredFact,
    ToolMetadataRecorded,
    invocation_stream_id,
    run_stream_id,
)
from maka_es.tooljournal.operation import ToolJournal, ToolOperationState
from maka_es.tooljournal.resolution import Resolution
from maka_es.tooljournal.resolver import ResolverState
from maka_es.wire.codec import canonical_args_hash, canonical_json, operation_id_for
from maka_es.wire.events import (
    RECONCILE_RESULT_KIND,
    RECOVERY_DECISION_KIND,
    TOOL_BOUNDARY_PROTOCOL_V1,
    RuntimeEvent,
)
from maka_es.wire.lanes import classify_lane
from maka_es.wire.run_header import (
    MUTABLE_HEADER_FIELDS,
    ContinuationSourceV2,
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)


@dataclass(frozen=True, slots=True)
class AppendDecision:
    """What an append would do: the facts to save and how many events were exact retries."""

    facts: tuple[StoredFact, ...]
    appended: tuple[RuntimeEvent, ...]
    retried: int


@dataclass(frozen=True, slots=True)
class ToolCommandDecision:
    """Facts of a T1 / T2 / recovery-bundle command; ``created=False`` for an exact retry."""

    facts: tuple[StoredFact, ...]
    operation_id: str
    created: bool


def build_dispatch_event(call: RuntimeEvent, operation_id: str, recovery_mode: str) -> RuntimeEvent:
    """The T1 dispatch fact for ``call`` (id ``<op>_dispatch``, same spine and ts as the call,
    args hash recomputed from the call's args). Deterministic, so a T1 retry is exact."""
    content = call.function_call
    assert content is not None
    wire: dict[str, Any] = {
        "id": f"{operation_id}_dispatch",
        **call.spine,
        "ts": call.ts,
        "partial": False,
        "role": "system",
        "author": "system",
        "actions": {
            "toolDispatch": {
                "protocol": TOOL_BOUNDARY_PROTOCOL_V1,
                "operationId": operation_id,
                "providerToolCallId": content.id,
                "toolName": content.name,
                "canonicalArgsHash": canonical_args_hash(content.name, content.args),
                "recoveryMode": recovery_mode,
            }
        },
        "refs": {"operationId": operation_id, "toolCallId": content.id},
    }
    if call.origin is not None:
        wire["origin"] = call.origin
    return RuntimeEvent.model_validate(wire)


def bind_invocation(header: RunHeader) -> InvocationBound:
    """Version 1 of the invocation's stream: one run per invocation, enforced by the store.
    Saved with every fact that creates a run."""
    if header.invocation_id is None:
        raise InvalidRunHeaderError(
            "a run created through the store needs its invocationId", field="invocationId"
        )
    return InvocationBound(
        originator_id=invocation_stream_id(header.invocation_id),
        originator_version=1,
        invocation_id=header.invocation_id,
        session_id=header.session_id,
        run_id=header.run_id,
        turn_id=header.turn_id,
    )


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


class Run:
    """Event-sourced Run. Build with :meth:`create` (new) or :func:`project_run` (replay)."""

    __slots__ = (
        "_event_index",
        "_events",
        "_journal",
        "_payloads",
        "_resolver",
        "_sealed_by",
        "_terminal_seq",
        "header",
        "id",
        "version",
    )

    def __init__(self, stream_id: UUID, header: RunHeader, version: int) -> None:
        self.id = stream_id
        self.header = header
        self.version = version
        self._events: list[RuntimeEvent] = []
        self._payloads: list[str] = []
        self._event_index: dict[str, int] = {}
        self._terminal_seq: int | None = None
        self._resolver = ResolverState()
        self._sealed_by: str | None = None
        self._journal = ToolJournal()

    # -- queries ---------------------------------------------------------------------------------

    @property
    def run_id(self) -> str:
        return self.header.run_id

    @property
    def events(self) -> tuple[RuntimeEvent, ...]:
        """The committed ledger in order (event_seq = position + 1)."""
        return tuple(self._events)

    @property
    def high_water(self) -> int:
        """Number of committed RuntimeEvents (the last event_seq)."""
        return len(self._events)

    @property
    def terminal_event(self) -> RuntimeEvent | None:
        return None if self._terminal_seq is None else self._events[self._terminal_seq - 1]

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
        return self._journal.operations

    def payload_at(self, event_seq: int) -> str:
        """Canonical JSON of the committed event at ``event_seq`` (1-based)."""
        return self._payloads[event_seq - 1]

    # -- commands (pure) --------------------------------------------------------------------------

    @staticmethod
    def create(header: RunHeader, created_at: float) -> RunCreated:
        """The fact that creates a run. The header must be non-terminal: a terminal header is
        only ever derived from a durable terminal RuntimeEvent."""
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
        )

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
        self._check_high_water(expected_high_water)
        decision = self._event_facts(events, committed_at)
        for event in decision.appended:
            reason = _reserved_reason(event)
            if reason is not None:
                raise ReservedFactError(
                    f"event {event.id}: {reason} is written only by its own store command",
                    detail={"eventId": event.id, "fact": reason},
                )
        self._check_tool_ledger(decision.appended)
        return decision

    def _check_high_water(self, expected_high_water: int | None) -> None:
        if expected_high_water is not None and expected_high_water != self.high_water:
            raise RuntimeOffsetMismatchError(
                f"expected high-water {expected_high_water}, run {self.run_id} has "
                f"{self.high_water}",
                detail={
                    "expectedRuntimeEventHighWater": expected_high_water,
                    "actualRuntimeEventHighWater": self.high_water,
                },
            )

    def _check_tool_ledger(self, events: Sequence[RuntimeEvent]) -> None:
        """Fail-stop on a corrupt ledger; refuse a batch that would introduce an issue."""
        touches_tools = any(
            classify_lane(e).is_tool_lane or e.protocol_marker is not None for e in events
        )
        if not touches_tools:
            return
        self._require_healthy_tool_ledger()
        issues = self._resolver.issues_if_fed(events)
        if issues:
            raise ToolLedgerRejectionError(
                f"event {issues[0].event_id} would introduce {issues[0].code}",
                code=issues[0].code,
                detail={"eventId": issues[0].event_id, "issueCode": issues[0].code},
            )

    def _event_facts(self, events: Sequence[RuntimeEvent], committed_at: float) -> AppendDecision:
        """Envelope rules shared by every write: exact retries are skipped; identity, partial
        and sealing are checked; new events become ``RuntimeEventRecorded`` facts."""
        facts: list[StoredFact] = []
        appended: list[RuntimeEvent] = []
        retried = 0
        batch_ids: dict[str, str] = {}
        terminal_seen = self._terminal_seq is not None
        seq = self.high_water
        version = self.version
        for event in events:
            payload = canonical_json(event)
            if self._is_exact_retry(event, payload, batch_ids):
                retried += 1
                continue
            self._check_identity(event)
            if event.partial:
                raise PartialEventRefusedError(
                    f"event {event.id} is partial; streaming chunks are never committed facts",
                    detail={"eventId": event.id},
                )
            if self._sealed_by is not None:
                raise RunSealedError(
                    f"run {self.run_id} is the source of continuation claim {self._sealed_by}; "
                    f"{event.id} refused",
                    detail={"eventId": event.id, "claimId": self._sealed_by},
                )
            if terminal_seen:
                if event.is_terminal:
                    raise TerminalConflictError(
                        f"run {self.run_id} already has a terminal event; {event.id} is a second",
                        detail={"eventId": event.id},
                    )
                raise RunSealedError(
                    f"run {self.run_id} is sealed by its terminal event; {event.id} refused",
                    detail={"eventId": event.id},
                )
            terminal_seen = event.is_terminal
            seq += 1
            version += 1
            batch_ids[event.id] = payload
            appended.append(event)
            facts.append(
                RuntimeEventRecorded(
                    originator_id=self.id,
                    originator_version=version,
                    event_seq=seq,
                    event_id=event.id,
                    payload=payload,
                    committed_at=committed_at,
                )
            )
        return AppendDecision(tuple(facts), tuple(appended), retried)

    def _is_exact_retry(self, event: RuntimeEvent, payload: str, batch: Mapping[str, str]) -> bool:
        existing = batch.get(event.id)
        if existing is None:
            index = self._event_index.get(event.id)
            existing = None if index is None else self._payloads[index]
        if existing is None:
            return False
        if existing != payload:
            raise EventIdConflictError(
                f"event id {event.id} is already committed with different content",
                detail={"eventId": event.id},
            )
        return True

    def _check_identity(self, event: RuntimeEvent) -> None:
        header = self.header
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
                f"event {event.id} does not belong to run {self.run_id}: {', '.join(wrong)} differ",
                detail={"eventId": event.id, "fields": wrong},
            )

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
        if self.header.is_terminal and self._header_backed_by_terminal():
            raise already_terminal
        merged = {**self.header.to_wire(), **patch}
        candidate = RunHeader.model_validate(merged)
        if self.header.is_terminal and not candidate.is_terminal:
            raise already_terminal
        if candidate.is_terminal:
            terminal = self.terminal_event
            if terminal is None:
                raise TerminalConflictError(
                    f"run {self.run_id}: a terminal header needs a durable terminal event first",
                    detail={"status": candidate.status},
                )
            if not header_matches_terminal(candidate, terminal):
                raise TerminalConflictError(
                    f"run {self.run_id}: header {candidate.status} does not match terminal event "
                    f"{terminal.id} ({run_status_for_terminal_event(terminal)})",
                    detail={"status": candidate.status, "eventId": terminal.id},
                )
        return RunHeaderUpdated(
            originator_id=self.id,
            originator_version=self.version + 1,
            patch=dict(patch),
            updated_at=updated_at,
        )

    def _header_backed_by_terminal(self) -> bool:
        terminal = self.terminal_event
        return terminal is not None and header_matches_terminal(self.header, terminal)

    # -- continuation commands ----------------------------------------------------------------

    def decide_seal(self, claim_id: str, *, sealed_at: float) -> RunSealed:
        """Seal this run as a continuation source, at its current version: if the run changed
        after it was read, the claim's save conflicts and nothing of the claim is written."""
        if self._sealed_by is not None:
            raise RunSealedError(
                f"run {self.run_id} is already the source of claim {self._sealed_by}",
                detail={"claimId": self._sealed_by},
            )
        return RunSealed(
            originator_id=self.id,
            originator_version=self.version + 1,
            claim_id=claim_id,
            sealed_at=sealed_at,
        )

    @staticmethod
    def create_continuation(
        header: RunHeader, start: RuntimeEvent, *, created_at: float, admitted: bool = False
    ) -> tuple[StoredFact, ...]:
        """The target Run of a continuation: created with its continuation-start fact as event
        1 (the generic path refuses start facts; this is their only writer).

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
        created = Run.create(header, created_at)
        run = project_run(None, [created])
        assert run is not None
        decision = run._event_facts([start], created_at)
        run._check_tool_ledger(decision.appended)
        if not admitted:
            return (created, *decision.facts)
        for fact in decision.facts:
            run.apply(fact)
        running = run.decide_header_update(
            {"status": "running", "updatedAt": start.ts}, updated_at=created_at
        )
        return (created, *decision.facts, running)

    def decide_claim_repair_start(
        self, start: RuntimeEvent, *, committed_at: float
    ) -> AppendDecision:
        """Event 1 of a claimed continuation target that was created but never started: the
        claim-repair start (spec §4.8). Only an empty run whose ``continuationSource`` names
        the start's claim takes it; an exact retry is a no-op."""
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
        decision = self._event_facts([start], committed_at)
        if decision.appended and self.high_water != 0:
            raise ReservedFactError(
                f"run {self.run_id} already started; a repair start must be its first event",
                detail={"eventId": start.id, "fact": "continuationStart"},
            )
        self._check_tool_ledger(decision.appended)
        return decision

    # -- tool journal commands (T1, T2, recovery bundle) -------------------------------------------

    def decide_tool_prepared(
        self,
        call: RuntimeEvent,
        *,
        recovery_mode: str,
        committed_at: float,
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommandDecision:
        """T1: the call (unless the identical call is already committed), the dispatch fact
        ``<op>_dispatch`` with the args hash recomputed from the call, and the tool's metadata,
        in one transaction. An identical T1 that already committed returns ``created=False``:
        another dispatcher owns the operation and the tool must not run again. ``metadata``
        must be strict JSON (``non_strict_json`` otherwise: no NaN, no lone surrogates)."""
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
        dispatch = build_dispatch_event(call, operation_id, recovery_mode)
        self._require_healthy_tool_ledger()
        existing = self._journal.get(operation_id)
        if existing is not None:
            if self._committed_payload(dispatch.id) == canonical_json(
                dispatch
            ) and self._committed_payload(call.id) == canonical_json(call):
                return ToolCommandDecision((), operation_id, created=False)
            raise ToolOperationConflictError(
                f"operation {operation_id} was already prepared with other facts",
                detail={"operationId": operation_id},
            )
        decision = self._event_facts([call, dispatch], committed_at)
        self._check_tool_ledger(decision.appended)
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
        """T2: the response bound to its operation (``refs.operationId``, ``refs.toolCallId``).
        An exact retry returns ``created=False``; a different second outcome is refused."""
        self._require_healthy_tool_ledger()
        operation = self._bound_operation(response)
        if operation.result_event_id is not None or operation.state != "prepared":
            if self._committed_payload(response.id) == canonical_json(response):
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
        decision = self._event_facts([response], committed_at)
        self._check_tool_ledger(decision.appended)
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
        """Reconcile fact, optional outcome and decision in one transaction (spec §5.4).
        Only an operation with a durable dispatch and no outcome can be settled this way;
        parked is final (only an exact retry of the same bundle succeeds)."""
        operation = self._journal.get(operation_id)
        if operation is None:
            raise ToolOperationNotFoundError(
                f"run {self.run_id} has no prepared operation {operation_id}",
                detail={"operationId": operation_id},
            )
        self._require_healthy_tool_ledger()
        bundle = [reconcile, *([outcome] if outcome is not None else []), decision_event]
        if operation.state != "prepared":
            if all(self._committed_payload(e.id) == canonical_json(e) for e in bundle):
                return ToolCommandDecision((), operation_id, created=False)
            raise ToolOperationSettledError(
                f"operation {operation_id} is already {operation.state}",
                detail={"operationId": operation_id, "state": operation.state},
            )
        decision = self._event_facts(bundle, committed_at)
        if len(decision.appended) != len(bundle):
            raise RecoveryBundleRejectedError(
                f"bundle for {operation_id} reuses committed event ids",
                code="recovery_fact_identity_conflict",
                detail={"operationId": operation_id},
            )
        self._check_bundle_facts(operation, reconcile, decision_event)
        issues, interpretation = self._resolver.prospect(
            bundle, lambda state: state.bundle_interpretation(operation_id)
        )
        if issues:
            raise ToolLedgerRejectionError(
                f"event {issues[0].event_id} would introduce {issues[0].code}",
                code=issues[0].code,
                detail={"eventId": issues[0].event_id, "issueCode": issues[0].code},
            )
        if interpretation is None or interpretation.kind != "valid":
            code = (
                interpretation.code
                if interpretation is not None and interpretation.code is not None
                else "recovery_fact_shape_conflict"
            )
            raise RecoveryBundleRejectedError(
                f"recovery bundle for {operation_id} is invalid: {code}",
                code=code,
                detail={"operationId": operation_id},
            )
        return ToolCommandDecision(decision.facts, operation_id, created=True)

    def _require_healthy_tool_ledger(self) -> None:
        """Fail-stop: once the ledger holds a resolver issue, no tool write (not even an exact
        retry) is acknowledged, because the ledger can no longer prove what happened."""
        if self._resolver.has_issues:
            first = self._resolver.issues[0]
            raise ToolLedgerCorruptionError(
                f"run {self.run_id} already holds tool-ledger corruption ({first.code} at "
                f"{first.event_id}); tool-bearing writes are refused",
                detail={"issueCode": first.code, "eventId": first.event_id},
            )

    def _check_bundle_facts(
        self,
        operation: ToolOperationState,
        reconcile: RuntimeEvent,
        decision_event: RuntimeEvent,
    ) -> None:
        """The command-level checks of spec §5.4, in its order, before the resolver's own
        interpretation judges evidence, outcome and causal order."""
        op = operation.operation_id

        def refuse(code: str, message: str) -> RecoveryBundleRejectedError:
            return RecoveryBundleRejectedError(
                f"recovery bundle for {op}: {message}", code=code, detail={"operationId": op}
            )

        if operation.recovery_mode != "reconcile":
            raise refuse(
                "recovery_mode_unsupported",
                f"dispatch recovery mode is {operation.recovery_mode}, not reconcile",
            )
        reconcile_fact = reconcile.actions.tool_recovery if reconcile.actions else None
        if reconcile_fact is None or reconcile_fact.kind != RECONCILE_RESULT_KIND:
            raise refuse("reconcile_fact_invalid", f"{reconcile.id} is not a reconcile result")
        decision_fact = decision_event.actions.tool_recovery if decision_event.actions else None
        if decision_fact is None or decision_fact.kind != RECOVERY_DECISION_KIND:
            raise refuse("decision_fact_invalid", f"{decision_event.id} is not a decision")
        for event in (reconcile, decision_event):
            refs = event.refs
            if (
                refs is None
                or refs.operation_id != op
                or refs.tool_call_id != operation.tool_call_id
            ):
                raise refuse(
                    "recovery_fact_identity_conflict", f"{event.id} is bound to another operation"
                )
        for fact in (reconcile_fact, decision_fact):
            if fact.payload.operation_id != op:
                raise refuse(
                    "operation_identity_conflict",
                    f"payload names operation {fact.payload.operation_id}",
                )

    def _bound_operation(self, response: RuntimeEvent) -> ToolOperationState:
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
        operation = self._journal.get(refs.operation_id)
        if operation is None:
            raise ToolOperationNotFoundError(
                f"run {self.run_id} has no prepared operation {refs.operation_id}",
                detail={"operationId": refs.operation_id, "eventId": response.id},
            )
        return operation

    def _committed_payload(self, event_id: str) -> str | None:
        index = self._event_index.get(event_id)
        return None if index is None else self._payloads[index]

    # -- evolution --------------------------------------------------------------------------------

    def apply(self, fact: StoredFact) -> None:
        """Fold one committed fact into the state (used only for committed facts)."""
        if fact.originator_version != self.version + 1:
            raise StoreCorruptionError(
                f"run stream {self.id} jumps from version {self.version} to "
                f"{fact.originator_version}"
            )
        if isinstance(fact, RuntimeEventRecorded):
            if fact.event_seq != len(self._events) + 1:
                raise StoreCorruptionError(
                    f"run {self.run_id}: event_seq {fact.event_seq} after {len(self._events)}"
                )
            event = RuntimeEvent.model_validate_json(fact.payload)
            self._event_index[event.id] = len(self._events)
            self._events.append(event)
            self._payloads.append(fact.payload)
            self._resolver.feed(event)
            self._journal.apply(event)
            if event.is_terminal and self._terminal_seq is None:
                self._terminal_seq = fact.event_seq
        elif isinstance(fact, RunSealed):
            self._sealed_by = fact.claim_id
        elif isinstance(fact, ToolMetadataRecorded):
            self._journal.apply_metadata(fact.operation_id, fact.metadata)
        elif isinstance(fact, RunHeaderUpdated):
            self.header = RunHeader.model_validate({**self.header.to_wire(), **fact.patch})
        else:
            raise StoreCorruptionError(f"unexpected fact {type(fact).__name__} in run stream")
        self.version = fact.originator_version


def project_run(run: Run | None, facts: Iterable[Any]) -> Run | None:
    """eventsourcing projector: fold facts into a Run (``None`` until ``RunCreated``)."""
    for fact in facts:
        if run is None:
            if not isinstance(fact, RunCreated):
                raise StoreCorruptionError(f"run stream starts with {type(fact).__name__}")
            run = Run(fact.originator_id, RunHeader.model_validate(fact.header), 1)
        else:
            run.apply(fact)
    return run
