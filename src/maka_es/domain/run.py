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

from maka_es.domain.codec import canonical_json
from maka_es.domain.events import RuntimeEvent
from maka_es.domain.facts import (
    RunCreated,
    RunHeaderUpdated,
    RuntimeEventRecorded,
    StoredFact,
    run_stream_id,
)
from maka_es.domain.run_header import (
    MUTABLE_HEADER_FIELDS,
    RunHeader,
    header_matches_terminal,
    run_status_for_terminal_event,
)
from maka_es.errors import (
    EventIdConflictError,
    EventIdentityMismatchError,
    HeaderUpdateRefusedError,
    InvalidRunHeaderError,
    PartialEventRefusedError,
    RunSealedError,
    RuntimeOffsetMismatchError,
    StoreCorruptionError,
    TerminalConflictError,
)


@dataclass(frozen=True, slots=True)
class AppendDecision:
    """What an append would do: the facts to save and how many events were exact retries."""

    facts: tuple[StoredFact, ...]
    appended: tuple[RuntimeEvent, ...]
    retried: int


class Run:
    """Event-sourced Run. Build with :meth:`create` (new) or :func:`project_run` (replay)."""

    __slots__ = (
        "_event_index",
        "_events",
        "_payloads",
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
    def has_terminal_event(self) -> bool:
        return self._terminal_seq is not None

    @property
    def terminal_event(self) -> RuntimeEvent | None:
        return None if self._terminal_seq is None else self._events[self._terminal_seq - 1]

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
        """Validate a batch and return the facts that commit it (all or nothing)."""
        if expected_high_water is not None and expected_high_water != self.high_water:
            raise RuntimeOffsetMismatchError(
                f"expected high-water {expected_high_water}, run {self.run_id} has "
                f"{self.high_water}",
                detail={
                    "expectedRuntimeEventHighWater": expected_high_water,
                    "actualRuntimeEventHighWater": self.high_water,
                },
            )
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
        is durable and matches it; a terminal header never changes again."""
        illegal = sorted(set(patch) - MUTABLE_HEADER_FIELDS)
        if illegal:
            raise HeaderUpdateRefusedError(
                f"header fields are immutable after creation: {', '.join(illegal)}",
                detail={"fields": illegal},
            )
        if self.header.is_terminal:
            raise HeaderUpdateRefusedError(
                f"run {self.run_id} header is already terminal ({self.header.status})",
                detail={"status": self.header.status},
            )
        merged = {**self.header.to_wire(), **patch}
        candidate = RunHeader.model_validate(merged)
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
            if event.is_terminal and self._terminal_seq is None:
                self._terminal_seq = fact.event_seq
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
