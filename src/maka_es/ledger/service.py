"""The ledger's commands and reads: sessions, runs, appends, header updates, ending a run, a run
with its first events, and the tool journal's T1 / T2 / recovery bundles.

Why a service over a port: these are the library's write rules (docs/reference/ledger.md
#write-rules). Each command loads the aggregates it needs from the :class:`RunStore`, lets them
decide (pure), and commits every resulting fact in ONE transaction; a refused command leaves the
store byte-for-byte unchanged. The services know nothing of eventsourcing, SQLite or the
application object (ADR 0017).

:class:`RunStarts` saves a run with its first events in ONE save (ADR 0036). Why a command of
its own: a turn's header and its user message must never exist apart; saved by ``create_run``
and then ``append_events``, a crash between the two leaves a run with no prompt, which a
restarted host can neither continue nor tell from an empty run. It saves the run stream, the
events, the invocation binding, the session's registration (and the host's lease renewal, when
due) in one transaction, under the write rules of both commands it joins: the events are decided
as a generic append on the new run (a reserved fact, a partial or foreign event is refused), the
header as ``create_run`` (its uniqueness, its invocation's); a refusal writes nothing, and an
exact retry (the same header, ``clock_fields`` aside, and the same events) writes nothing.

:class:`ToolCommands` are the tool journal's commands on the store (ADR 0007). Why here and not
in ``tooljournal``: the Run aggregate is the consistency boundary of every tool fact
(docs/reference/tool-journal.md#t1-t2), so the command loads the Run, lets it decide and commits
the decision in ONE transaction. ``tooljournal`` holds the pure rules the Run applies and the
``ToolRuntime`` that drives a tool between T1 and T2 through
:class:`maka_es.tooljournal.ports.ToolJournalStore`, which this service satisfies.

:class:`HostSessions` opens sessions and starts runs with less ceremony for a host
(docs/reference/ledger.md#run-header): a host that follows the README should neither spell a
whole header per run nor learn only at continuation time (``workspace_identity_missing``) that
its sessions carry no workspace identity. It fills both in from the :class:`HostConfig`, a
:class:`WorkspaceResolver` port (the marker adapter in production, so no I/O here), the
application's clock and id factory.

A run's trace context (``record_trace_context``, ``recorded_trace_context``) is recorded once
when the run starts and read after a crash. Why in the ledger: a process killed inside a tool
takes its spans with it, and the process that recovers and resumes the run has nothing in memory
that names the interrupted trace. The run's ``traceparent`` (W3C, ids and flags only) is saved
as version 1 of the run's own trace stream
(:class:`~maka_es.ledger.model.facts.TraceContextRecorded`), outside the RuntimeEvent wire
vocabulary and the run header, so no spec shape or digest changes (ADR 0043). It is written only
when tracing is on: a host without an OpenTelemetry SDK writes nothing.

Best effort, like all telemetry: a second record (a retry, a racing writer) loses on the
stream's version and is ignored, and a store fault while recording is noted, never raised.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from maka_es import failpoints
from maka_es.errors import (
    ConcurrentWriteError,
    InvalidRunHeaderError,
    InvalidRuntimeEventError,
    InvocationSpineConflictError,
    RunAlreadyExistsError,
    SessionAlreadyExistsError,
    SessionNotFoundError,
    TerminalConflictError,
)
from maka_es.ledger.host_leases import HostLeases
from maka_es.ledger.model.facts import (
    RunCreated,
    SessionOpened,
    StoredFact,
    TraceContextRecorded,
    bind_invocation,
    checked_session_args,
    invocation_stream_id,
    is_exact_create_retry,
    run_stream_id,
    trace_stream_id,
)
from maka_es.ledger.model.host_config import HostConfig, header_for_run
from maka_es.ledger.model.ownership import RunOwner
from maka_es.ledger.model.run import Run, ToolCommandDecision, project_run
from maka_es.ledger.model.session import Session, project_session
from maka_es.ledger.ports import RunStore, is_store_fault
from maka_es.telemetry import TRACEPARENT_PATTERN
from maka_es.tooljournal.model.attestation import OperatorAttestation, validate_attestation_input
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.resolver import Resolution
from maka_es.wire.events import RuntimeEvent, as_runtime_event
from maka_es.wire.run_header import RunHeader, terminal_header_patch

T = TypeVar("T")

#: Called after a successful append with the newly committed events (host hook).
OnCommitted = Callable[[str, Sequence[RuntimeEvent]], None]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """Read view of a session."""

    session_id: str
    cwd: str
    workspace_identity: str | None
    opened_at: float
    run_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Outcome of an append: how many events were new, how many were exact retries."""

    appended: int
    retried: int
    high_water: int


def concurrent_write(run_id: str) -> ConcurrentWriteError:
    """The refusal of a command whose run another writer changed since it was read."""
    return ConcurrentWriteError(
        f"run {run_id} was written concurrently; re-read and retry", detail={"runId": run_id}
    )


def session_exists(session_id: str, differs: list[str]) -> SessionAlreadyExistsError:
    """The refusal to open ``session_id`` again with another cwd / workspace identity
    (``differs``: the wire names of the fields that differ)."""
    message = f"session {session_id} already exists"
    if differs:
        message += f" with another {' and '.join(differs)}"
    return SessionAlreadyExistsError(message, detail={"sessionId": session_id, "fields": differs})


class Ledger:
    """Sessions and runs on a :class:`RunStore` (see module docstring)."""

    def __init__(
        self, store: RunStore, on_committed: OnCommitted, ownership: HostLeases | None = None
    ) -> None:
        self._store = store
        self._on_committed = on_committed
        #: This host's identity and lease (ADR 0021); ``None``: runs are created ownerless.
        self.ownership = ownership

    def check_writer(self, run: Run) -> None:
        """Refuse ``run_owner_fenced`` a write this host may not make to ``run`` (ADR 0021)."""
        if self.ownership is not None:
            self.ownership.check_writer(run)

    def new_owner(self) -> RunOwner | None:
        """The owner a run this host creates records (``None``: no host identity)."""
        return None if self.ownership is None else self.ownership.new_owner()

    def lease_renewal(self) -> list[StoredFact]:
        """The lease renewal to save with a run this host creates (ADR 0021), if due."""
        return [] if self.ownership is None else self.ownership.due_renewal()

    def hold(self, run_id: str, owner: RunOwner | None, facts: Sequence[StoredFact] = ()) -> None:
        """After a commit that created ``run_id`` owned by ``owner`` (with ``facts``): this
        process holds the run, and its lease renewal among ``facts`` is noted."""
        if self.ownership is not None and owner is not None:
            self.ownership.hold(run_id, owner.epoch)
            self.ownership.renewed(facts)

    def now_ms(self) -> int:
        """Now, as the integer milliseconds every library-written timestamp carries."""
        return self._store.now_ms()

    def command(self) -> AbstractContextManager[object]:
        """Serialise a multi-command sequence of this process (e.g. one continuation)."""
        return self._store.command()

    def load_run(self, run_id: str) -> Run:
        """The Run aggregate (a read: its deciders return facts, they never save). Inside a
        command, the commands' cached state; outside one, the calling thread's own."""
        return self._store.load_run(run_id)

    def read_run(self, run_id: str, view: Callable[[Run], T]) -> T:
        """``view`` of the Run on a state no command changes while it runs: the commands'
        cached state while no command runs, else this thread's own (the store's ``read_run``).
        Why next to :meth:`load_run`: a reader that looks at a run several times (startup
        recovery) shares the one cached Run the commands and the recovery read model fold,
        instead of folding it once more into its own thread's cache."""
        return self._store.read_run(run_id, view)

    # -- sessions -------------------------------------------------------------------------------

    def open_session(
        self, session_id: str, cwd: str, workspace_identity: str | None = None
    ) -> SessionInfo:
        """Open a session, or return it when it is already open with the same cwd and workspace
        identity (both compared exactly; ``None`` is a value): a host repeats this call at
        every start. An existing session with another cwd or identity is refused with
        ``session_already_exists`` and ``detail.fields`` naming what differs; nothing is written.
        Two processes opening it at once: one writes, the other compares with what it wrote."""
        checked_session_args(session_id, cwd, workspace_identity)
        with self._store.command():
            existing = self._session_if_open(session_id)
            if existing is None:
                failpoints.hit(failpoints.SESSION_ABSENT_BEFORE_OPEN)
                fact = Session.open(session_id, cwd, workspace_identity, self._store.now_ms())
                try:
                    self._store.commit([fact], conflict=lambda: session_exists(session_id, []))
                except SessionAlreadyExistsError:
                    existing = self.get_session(session_id)  # another writer was first
                else:
                    # what was just saved, not a re-read (see update_run_header)
                    return _session_info(project_session(None, [fact]))
            differs = [
                name
                for name, ours, theirs in (
                    ("cwd", cwd, existing.cwd),
                    ("workspaceIdentity", workspace_identity, existing.workspace_identity),
                )
                if ours != theirs
            ]
            if differs:
                raise session_exists(session_id, differs)
            return existing

    def _session_if_open(self, session_id: str) -> SessionInfo | None:
        try:
            return self.get_session(session_id)
        except SessionNotFoundError:
            return None

    def get_session(self, session_id: str) -> SessionInfo:
        """The session's id, cwd and workspace identity (``session_not_found``)."""
        return _session_info(self._store.load_session(session_id))

    def list_sessions(self) -> list[str]:
        """Session ids in the order they were opened (from the notification log)."""
        return [
            fact.session_id
            for fact in self._store.facts_with_topic(SessionOpened.TOPIC)
            if isinstance(fact, SessionOpened)
        ]

    def session_registration(self, session_id: str, run_id: str, at: float) -> StoredFact:
        """The fact registering ``run_id`` on its session (to save with other facts)."""
        return self._store.load_session(session_id).register_run(run_id, at)

    # -- runs -----------------------------------------------------------------------------------

    def create_run(
        self, header: RunHeader | Mapping[str, Any], *, clock_fields: Collection[str] = ()
    ) -> RunHeader:
        """Create a run (AgentRun header, non-terminal) in an existing session: one save of the
        run stream, its invocation binding (one run per invocation, the store enforces it) and
        the session's registration. An exact retry (``is_exact_create_retry``, ``clock_fields``
        aside) answers the run's current header and writes nothing."""
        parsed = RunHeader.decode(header)
        with self._store.command():
            session = self._store.load_session(parsed.session_id)
            created_at = self._store.now_ms()
            owner = self.new_owner()
            created = Run.create(parsed, created_at, owner)
            binding = bind_invocation(parsed)
            registered = session.register_run(parsed.run_id, created_at)
            facts = [created, binding, registered, *self.lease_renewal()]
            try:
                self._store.commit(facts, conflict=lambda: self.create_run_conflict(parsed))
            except RunAlreadyExistsError:
                first = self._store.first_fact(run_stream_id(parsed.run_id))
                if not is_exact_create_retry(first, parsed, clock_fields):
                    raise
                return self.get_run_header(parsed.run_id)
            self.hold(parsed.run_id, owner, facts)
            return parsed

    def create_run_conflict(self, header: RunHeader) -> Exception:
        """Why a run's creation lost: its id, its invocation, or a concurrent session write."""
        if self._store.stream_exists(run_stream_id(header.run_id)):
            return RunAlreadyExistsError(
                f"run {header.run_id} already exists", detail={"runId": header.run_id}
            )
        if header.invocation_id is not None and self._store.stream_exists(
            invocation_stream_id(header.invocation_id)
        ):
            return InvocationSpineConflictError(
                f"invocation {header.invocation_id} already belongs to another run",
                detail={"invocationId": header.invocation_id},
            )
        return ConcurrentWriteError(
            f"session {header.session_id} changed concurrently; retry",
            detail={"sessionId": header.session_id},
        )

    def run_exists(self, run_id: str) -> bool:
        """Whether a run with this id was created: a cheap stream check, no fold."""
        return self._store.stream_exists(run_stream_id(run_id))

    def import_run(
        self,
        header: RunHeader | Mapping[str, Any],
        events: Sequence[RuntimeEvent | Mapping[str, Any]],
    ) -> AppendResult:
        """Import a whole run (e.g. a legacy JSONL ledger) in ONE save: the run, its invocation
        binding, the session registration (and the session itself if it is new), every event,
        and, when the imported header is terminal, the header's terminal status.

        Idempotent: importing the same run again appends nothing. The same gates as live
        writes apply (a terminal header must match a durable terminal event), so a corrupt
        legacy run is refused as a whole rather than half-imported.
        """
        parsed = RunHeader.decode(header)
        decoded = [as_runtime_event(event) for event in events]
        if parsed.invocation_id is None and decoded:
            parsed = parsed.model_copy(update={"invocation_id": decoded[0].invocation_id})
        with self._store.command():
            if self.run_exists(parsed.run_id):
                existing = self._store.load_run(parsed.run_id)
                result = self.append_events(parsed.run_id, decoded)
                if parsed.is_terminal and not existing.header.is_terminal:
                    self.update_run_header(parsed.run_id, _terminal_patch(parsed))
                return result
            facts, high_water, decision_counts = self._import_facts(parsed, decoded)
            facts += self.lease_renewal()
            self._store.commit(facts, conflict=lambda: self.create_run_conflict(parsed))
            self.hold(parsed.run_id, self.new_owner(), facts)
            return AppendResult(*decision_counts, high_water)

    def _import_facts(
        self, parsed: RunHeader, decoded: list[RuntimeEvent]
    ) -> tuple[list[StoredFact], int, tuple[int, int]]:
        """Every fact of a new imported run, decided against a fresh in-memory aggregate."""
        facts: list[StoredFact] = []
        now = self._store.now_ms()
        try:
            session = self._store.load_session(parsed.session_id)
        except SessionNotFoundError:
            opened = Session.open(parsed.session_id, parsed.cwd, parsed.workspace_identity, now)
            facts.append(opened)
            session = Session(opened)
        live = parsed.model_copy(update={"status": "running"}) if parsed.is_terminal else parsed
        created = Run.create(live, now, self.new_owner())
        run = project_run(None, [created])
        assert run is not None  # a RunCreated fact always projects a Run
        decision = run.decide_append(decoded, committed_at=now)
        for fact in decision.facts:
            run.apply(fact)
        facts += [created, *decision.facts]
        if parsed.is_terminal:
            facts.append(run.decide_header_update(_terminal_patch(parsed), updated_at=now))
        facts.append(bind_invocation(live))
        facts.append(session.register_run(parsed.run_id, now))
        return facts, run.high_water, (len(decision.appended), decision.retried)

    def get_run_header(self, run_id: str) -> RunHeader:
        """The run's header as committed (``run_not_found`` when there is none)."""
        return self._store.read_run(run_id, lambda run: run.header)

    def list_runs(self, session_id: str) -> list[RunHeader]:
        """Headers of the session's runs in creation order."""
        session = self._store.load_session(session_id)
        return [self.get_run_header(entry.run_id) for entry in session.runs]

    def all_run_ids(self) -> list[str]:
        """Every run id, in creation order (scans the notification log by topic)."""
        return [
            str(fact.header["runId"])
            for fact in self._store.facts_with_topic(RunCreated.TOPIC)
            if isinstance(fact, RunCreated)
        ]

    def list_all_runs(self) -> list[RunHeader]:
        """The header of every run of the store, in creation order (one topic scan, then each
        run's current header): what a host lists or picks from after a restart."""
        return [self.get_run_header(run_id) for run_id in self.all_run_ids()]

    # -- appends and headers ----------------------------------------------------------------------

    def append_events(
        self,
        run_id: str,
        events: Iterable[RuntimeEvent | Mapping[str, Any]],
        *,
        expected_high_water: int | None = None,
    ) -> AppendResult:
        """Append RuntimeEvents to a run atomically (all or nothing).

        Exact retries of committed ids are no-ops; the same id with other content, an event of
        another run, a partial event, anything after the terminal event, or a stale
        ``expected_high_water`` is refused with a typed error and nothing is written.
        """
        decoded = [as_runtime_event(event) for event in events]
        with self._store.command():
            run = self._store.load_run(run_id)
            self.check_writer(run)
            decision = run.decide_append(
                decoded, committed_at=self._store.now_ms(), expected_high_water=expected_high_water
            )
            if decision.facts:
                self._store.commit(decision.facts, conflict=lambda: concurrent_write(run_id))
        if decision.appended:
            self._on_committed(run_id, decision.appended)
        return AppendResult(len(decision.appended), decision.retried, decision.high_water)

    def append_event(
        self,
        run_id: str,
        event: RuntimeEvent | Mapping[str, Any],
        *,
        expected_high_water: int | None = None,
    ) -> AppendResult:
        """:meth:`append_events` of one event."""
        return self.append_events(run_id, [event], expected_high_water=expected_high_water)

    def update_run_header(self, run_id: str, patch: Mapping[str, Any]) -> RunHeader:
        """Patch the mutable header fields. A terminal status is accepted only when the run's
        terminal RuntimeEvent is already durable and matches it."""
        with self._store.command():
            run = self._store.load_run(run_id)
            self.check_writer(run)
            fact = run.decide_header_update(patch, updated_at=self._store.now_ms())
            decided = run.header_after(fact)
            self._store.commit([fact], conflict=lambda: concurrent_write(run_id))
        # The decided header, not a re-read: once COMMIT returned, the command is saved, and a
        # store fault on a read after it must not report it as not written (ADR 0028).
        return decided

    def end_run(self, run_id: str, terminal: RuntimeEvent | Mapping[str, Any]) -> RunHeader:
        """End a run: the terminal event is made durable FIRST, then the header derived from
        it (docs/reference/ledger.md#terminal-rules). If the process dies in between, startup
        recovery repairs the header from the event; a terminal header without its event is
        never written by this library."""
        event = as_runtime_event(terminal)
        header = self.get_run_header(run_id)
        patch = terminal_header_patch(header, event)
        if patch is None or not event.is_terminal:
            raise TerminalConflictError(
                f"event {event.id} is not a terminal fact with a run status",
                detail={"eventId": event.id},
            )
        self.append_events(run_id, [event])
        failpoints.hit(failpoints.AFTER_TERMINAL_EVENT)
        current = self.get_run_header(run_id)
        if current.to_wire() == {**current.to_wire(), **patch}:
            # An exact retry of an end_run that was saved whole (its caller saw a fault, e.g.
            # store_outcome_unknown): the event was an exact retry too; nothing to write.
            return current
        ended = self.update_run_header(run_id, patch)
        failpoints.hit(failpoints.AFTER_TERMINAL_HEADER)
        return ended

    # -- reads ----------------------------------------------------------------------------------

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        """The run's committed RuntimeEvents, in commit order."""
        return self._store.read_run(run_id, lambda run: list(run.events))

    @property
    def fast_paths(self) -> bool:
        """The store's fast paths are on (``MAKA_ES_FAST_PATHS=n`` turns them off, ADR 0037):
        callers above the store (the agent loop's replay, ADR 0046) follow the same switch."""
        return self._store.fast_paths

    def read_run_events_after(self, run_id: str, count: int) -> list[RuntimeEvent]:
        """The run's committed RuntimeEvents after its first ``count``, in commit order: what
        a reader holding those reads next (the agent loop's replay, ADR 0046)."""
        return self._store.read_run(run_id, lambda run: run.events_after(count))

    def run_high_water(self, run_id: str) -> int:
        """The run's committed event count: the ``expected_high_water`` of its next append."""
        return self._store.read_run(run_id, lambda run: run.high_water)

    def read_run_payloads(self, run_id: str) -> list[str]:
        """The stored canonical JSON of each committed event (export, digests)."""
        return self._store.read_run(
            run_id, lambda run: [run.payload_at(seq) for seq in range(1, run.high_water + 1)]
        )

    # -- trace context (ADR 0043) ---------------------------------------------------------------

    def record_trace_context(self, run_id: str, traceparent: str | None) -> bool:
        """Record ``run_id``'s ``traceparent`` (best effort: ``ledger.trace_context``)."""
        return record_trace_context(self._store, run_id, traceparent)

    def trace_context(self, run_id: str) -> str | None:
        """The ``traceparent`` recorded for ``run_id``, if any."""
        return recorded_trace_context(self._store, run_id)


def _terminal_patch(header: RunHeader) -> dict[str, Any]:
    """The mutable terminal fields of an imported header, as a header patch."""
    wire = header.to_wire()
    fields = ("status", "updatedAt", "completedAt", "failureClass", "failureMessage", "abortSource")
    return {key: wire[key] for key in fields if key in wire}


def _session_info(session: Session | None) -> SessionInfo:
    assert session is not None  # a SessionOpened fact always projects to a session
    return SessionInfo(
        session_id=session.session_id,
        cwd=session.cwd,
        workspace_identity=session.workspace_identity,
        opened_at=session.opened_at,
        run_ids=tuple(entry.run_id for entry in session.runs),
    )


class RunStarts:
    """``create_run_with_events`` on the ledger's store, with the ledger's ownership rules."""

    def __init__(self, store: RunStore, ledger: Ledger, on_committed: OnCommitted) -> None:
        self._store = store
        self._ledger = ledger
        self._on_committed = on_committed

    def create_run_with_events(
        self,
        header: RunHeader | Mapping[str, Any],
        events: Sequence[RuntimeEvent | Mapping[str, Any]],
        *,
        clock_fields: Collection[str] = (),
    ) -> AppendResult:
        """A run with its first events in ONE save (see the module docstring)."""
        parsed = RunHeader.decode(header)
        decoded = [as_runtime_event(event) for event in events]
        ledger = self._ledger
        with self._store.command():
            session = self._store.load_session(parsed.session_id)
            now = self._store.now_ms()
            owner = ledger.new_owner()
            created = Run.create(parsed, now, owner)
            run = project_run(None, [created])
            assert run is not None  # a RunCreated fact always projects a Run
            decision = run.decide_append(decoded, committed_at=now)
            facts = [created, *decision.facts, bind_invocation(parsed)]
            facts += [session.register_run(parsed.run_id, now), *ledger.lease_renewal()]
            try:
                self._store.commit(facts, conflict=lambda: ledger.create_run_conflict(parsed))
            except RunAlreadyExistsError:
                first = self._store.first_fact(run_stream_id(parsed.run_id))
                if not is_exact_create_retry(first, parsed, clock_fields):
                    raise
                return ledger.append_events(parsed.run_id, decoded)
            ledger.hold(parsed.run_id, owner, facts)
        if decision.appended:
            self._on_committed(parsed.run_id, decision.appended)
        return AppendResult(len(decision.appended), decision.retried, len(decision.appended))


@dataclass(frozen=True, slots=True)
class ToolCommit:
    """Result of T1 / T2 / a recovery bundle: ``created=False`` means an exact retry."""

    operation_id: str
    created: bool


class ToolCommands:
    """T1 / T2 / recovery-bundle commands and the journal's reads (see module docstring)."""

    def __init__(self, store: RunStore, ownership: HostLeases | None = None) -> None:
        self._store = store
        self._ownership = ownership

    def _commit(self, run_id: str, decide: Callable[[Run], ToolCommandDecision]) -> ToolCommit:
        with self._store.command():
            run = self._store.load_run(run_id)
            if self._ownership is not None:
                self._ownership.check_writer(run)  # ADR 0021: a fenced host writes nothing
            decision = decide(run)
            if decision.facts:
                self._store.commit(decision.facts, conflict=lambda: concurrent_write(run_id))
        return ToolCommit(decision.operation_id, decision.created)

    def commit_tool_prepared(
        self,
        run_id: str,
        call: RuntimeEvent | Mapping[str, Any],
        *,
        recovery_mode: str = "never_auto_retry",
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        """T1, one transaction: the function_call (unless the identical call is committed),
        the dispatch fact and the tool's recovery metadata. ``created=False`` means the same T1
        already committed: the caller must NOT run the tool."""
        event = as_runtime_event(call)
        return self._commit(
            run_id,
            lambda run: run.decide_tool_prepared(
                event,
                recovery_mode=recovery_mode,
                committed_at=self._store.now_ms(),
                metadata=metadata,
            ),
        )

    def commit_tool_outcome(
        self, run_id: str, response: RuntimeEvent | Mapping[str, Any]
    ) -> ToolCommit:
        """T2, one transaction: the response bound to its prepared operation."""
        event = as_runtime_event(response)
        return self._commit(
            run_id, lambda run: run.decide_tool_outcome(event, committed_at=self._store.now_ms())
        )

    def commit_tool_recovery_bundle(
        self,
        run_id: str,
        operation_id: str,
        *,
        reconcile: RuntimeEvent | Mapping[str, Any],
        decision: RuntimeEvent | Mapping[str, Any],
        outcome: RuntimeEvent | Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        """Recovery bundle, one transaction: reconcile fact, optional outcome, decision."""
        reconcile_event = as_runtime_event(reconcile)
        decision_event = as_runtime_event(decision)
        outcome_event = None if outcome is None else as_runtime_event(outcome)
        return self._commit(
            run_id,
            lambda run: run.decide_recovery_bundle(
                operation_id,
                reconcile_event,
                decision_event,
                outcome_event,
                committed_at=self._store.now_ms(),
            ),
        )

    def attest_operation(
        self,
        run_id: str,
        operation_id: str,
        *,
        applied: bool,
        result: Any = None,
        actor: str,
        note: str = "",
    ) -> tuple[ToolCommit, OperatorAttestation]:
        """An operator's attestation of an indeterminate operation, one transaction (ADR 0022):
        the T2 response carrying the attested outcome and its provenance, stamped with the
        application clock. Returns the commit and the attestation that stands (on
        ``created=False``, the one committed first, with its original time)."""
        validate_attestation_input(actor, note, applied, result)
        attestation = OperatorAttestation(
            operation_id=operation_id,
            applied=applied,
            result=result,
            actor=actor,
            note=note,
            attested_at=self._store.now_ms(),
            response_event_id=f"{operation_id}_response",
        )
        commit = self._commit(
            run_id,
            lambda run: run.decide_attestation(attestation, committed_at=attestation.attested_at),
        )
        standing = self._store.read_run(run_id, lambda run: run.attestation(operation_id))
        return commit, standing if standing is not None else attestation

    def attestations(self, run_id: str) -> tuple[OperatorAttestation, ...]:
        """The operator attestations recorded in the run (ADR 0022)."""
        return self._store.read_run(run_id, lambda run: run.attestations)

    def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        """Journal state of every operation of the run that crossed T1."""
        return self._store.read_run(run_id, lambda run: run.tool_operations)

    def resolve_run(self, run_id: str) -> Resolution:
        """The RecoveryResolver's verdict over the run's committed ledger."""
        return self._store.read_run(run_id, lambda run: run.resolution())


#: The header fields ``start_run`` fills from the clock: its retry cannot repeat them, so an
#: exact retry of ``start_run`` is the same session, ids and config (``is_exact_create_retry``).
CLOCK_FIELDS = frozenset({"createdAt", "updatedAt"})


class WorkspaceResolver(Protocol):
    """The workspace identity of ``cwd`` (``workspace:v1:<uuid>``), the same one at every call
    for the same workspace; raises a typed ``WorkspaceIdentityError`` when none can be
    established (docs/reference/continuation.md#workspace-identity)."""

    def __call__(self, cwd: str) -> str: ...


class HostSessions:
    """``open_session`` with the identity resolved, ``start_run`` from the host config."""

    def __init__(
        self,
        ledger: Ledger,
        config: HostConfig | None,
        resolver: WorkspaceResolver | None,
        new_id: Callable[[], str],
        now_ms: Callable[[], int],
    ) -> None:
        self._ledger = ledger
        self.config = config
        self.resolver = resolver
        self._new_id = new_id
        self._now_ms = now_ms

    def open_session(
        self, session_id: str, cwd: str | None = None, workspace_identity: str | None = None
    ) -> SessionInfo:
        """Open (or reopen, idempotently) a session. ``cwd`` defaults to the host config's;
        without an explicit identity the resolver's identity of ``cwd`` is recorded - the same
        marker is read at every start, so repeating the call returns the same session. A
        resolver failure, and an argument that is not UTF-8 text (``invalid_runtime_event``),
        raise their typed error before anything is written."""
        chosen_cwd = cwd if cwd is not None else (self.config.cwd if self.config else None)
        if chosen_cwd is None:
            raise InvalidRuntimeEventError(
                "open_session needs a cwd (no host config with a cwd)",
                field="cwd",
                detail={"reason": "cwd_missing"},
            )
        # Checked before the resolver, which may publish a workspace marker in ``cwd``.
        checked_session_args(session_id, chosen_cwd, workspace_identity)
        if workspace_identity is None and self.resolver is not None:
            workspace_identity = self.resolver(chosen_cwd)
        return self._ledger.open_session(session_id, chosen_cwd, workspace_identity)

    def start_run(
        self,
        session_id: str,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        config: HostConfig | None = None,
    ) -> RunHeader:
        """Create a run in ``session_id`` from the host config (or ``config``); the ids default
        to fresh ones from the application's id factory, the timestamps to its clock. Without
        any config there are no header fields to fill: ``invalid_run_header``, nothing written.
        A retry with the same ids and config (after an unknown outcome, or a restart) answers
        the run it created: the timestamps are this call's own readings, not compared."""
        header = self.header_for(
            session_id, run_id=run_id, invocation_id=invocation_id, turn_id=turn_id, config=config
        )
        return self._ledger.create_run(header, clock_fields=CLOCK_FIELDS)

    def header_for(
        self,
        session_id: str,
        *,
        run_id: str | None = None,
        invocation_id: str | None = None,
        turn_id: str | None = None,
        config: HostConfig | None = None,
    ) -> RunHeader:
        """The header ``start_run`` would create (nothing written): what a turn creates
        together with its user message (``RunStarts.create_run_with_events``)."""
        chosen = config if config is not None else self.config
        if chosen is None:
            raise InvalidRunHeaderError(
                "start_run needs a HostConfig (host_config= on the application, or config=)",
                field="backendKind",
                detail={"sessionId": session_id},
            )
        session = self._ledger.get_session(session_id)
        return header_for_run(
            chosen,
            session_id=session_id,
            session_cwd=session.cwd,
            workspace_identity=session.workspace_identity,
            run_id=run_id if run_id is not None else self._new_id(),
            invocation_id=invocation_id if invocation_id is not None else self._new_id(),
            turn_id=turn_id if turn_id is not None else self._new_id(),
            now_ms=self._now_ms(),
        )


_log = logging.getLogger(__name__)
_TRACEPARENT_RE = re.compile(TRACEPARENT_PATTERN)


class _AlreadyRecordedError(Exception):
    """The run's trace stream already has its version 1 (never leaves this module)."""


def record_trace_context(store: RunStore, run_id: str, traceparent: str | None) -> bool:
    """Save ``traceparent`` as ``run_id``'s trace context; ``False`` when there is none to
    save (or it is not a W3C ``traceparent``), one is already recorded, or the store failed
    (noted at debug level)."""
    if traceparent is None or _TRACEPARENT_RE.fullmatch(traceparent) is None:
        return False
    stream = trace_stream_id(run_id)
    fact = TraceContextRecorded(
        originator_id=stream,
        originator_version=1,
        run_id=run_id,
        traceparent=traceparent,
        recorded_at=store.now_ms(),
    )
    try:
        with store.command():
            store.commit([fact], conflict=_AlreadyRecordedError)
    except _AlreadyRecordedError:
        return False
    except Exception as exc:
        if not is_store_fault(exc):
            raise
        _log.debug("trace context of %s not recorded: %s", run_id, type(exc).__name__)
        return False
    return True


def recorded_trace_context(store: RunStore, run_id: str) -> str | None:
    """The ``traceparent`` recorded for ``run_id`` (``None``: none recorded, or unreadable)."""
    try:
        fact = store.first_fact(trace_stream_id(run_id))
    except Exception as exc:
        if not is_store_fault(exc):
            raise
        _log.debug("trace context of %s not read: %s", run_id, type(exc).__name__)
        return None
    return fact.traceparent if isinstance(fact, TraceContextRecorded) else None
