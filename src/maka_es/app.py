"""RuntimeApplication: the event-sourced store of sessions, runs and their RuntimeEvent ledgers.

Why an ``eventsourcing.Application`` subclass: the library gives us the recorder (SQLite,
PostgreSQL, in-memory), optimistic concurrency on ``(originator_id, originator_version)`` and
the notification log; maka_es adds the domain rules. Every command validates against the
current aggregates *before* anything is written, then commits all of its facts in ONE
``save()`` (one transaction). A refused command leaves the store byte-for-byte unchanged.

Extension points for a host's own application service (subclass it):

* ``clock`` — milliseconds since the epoch; default wall clock. Inject a fixed clock in tests.
  Every timestamp the library writes is :meth:`RuntimeApplication.now_ms`: the clock's reading
  floored to integer milliseconds.
* ``id_factory`` — fresh ids for facts the runtime authors itself; default uuid4 hex.
* ``host_inspector`` — the host's safety facts for continuation planning (Phase 1).
* ``telemetry`` — lifecycle events (identities and codes only); default: standard logging.
* :meth:`on_events_committed` — called after a successful append (e.g. to wake a UI).

The store location comes from the environment (``env=`` or ``os.environ``): the defaults are
``PERSISTENCE_MODULE=maka_es.adapters.sqlite`` (SQLite, WAL, ``synchronous=FULL``) and
``SQLITE_DBNAME=maka_es.sqlite``; ``PERSISTENCE_MODULE=eventsourcing.popo`` is the in-memory
store for pure unit tests.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError, Mapper, PersistenceError, Transcoder

from maka_es.continuation.executor import (
    ContinuationExecutor,
    ContinuationOutcome,
    ContinuationRevalidationError,
)
from maka_es.continuation.host import HostInspector
from maka_es.continuation.planner import (
    FEATURE_FLAG,
    ContinuationPlanner,
    PlannerSettings,
    RunReader,
    park,
)
from maka_es.continuation.provider import Provider
from maka_es.continuation.telemetry import Telemetry
from maka_es.ledger.faults import STORE_FAULTS, store_fault_class
from maka_es.recovery.startup import StartupRecovery, StartupRecoveryReport
from maka_es.recovery.status import RecoveryStatusProjector

if TYPE_CHECKING:  # tools depend on this module; only the type is needed here
    from maka_es.tooljournal.runtime import ToolRuntime
from maka_es import failpoints
from maka_es.adapters.mapper import FactMapper, JsonTranscoder
from maka_es.continuation.claim import ContinuationClaim, project_claim
from maka_es.continuation.gates import ContinuationPlan
from maka_es.errors import (
    ConcurrentWriteError,
    ContinuationStartConflictError,
    InvalidPlanRequestError,
    InvocationSpineConflictError,
    MakaError,
    ReservedFactError,
    RunAlreadyExistsError,
    RunNotFoundError,
    SessionAlreadyExistsError,
    SessionNotFoundError,
    StoreUnavailableError,
    TerminalConflictError,
)
from maka_es.ledger.facts import (
    ContinuationClaimed,
    RunCreated,
    SessionOpened,
    StartKind,
    StoredFact,
    claim_stream_id,
    invocation_stream_id,
    run_stream_id,
    session_stream_id,
)
from maka_es.ledger.run import Run, ToolCommandDecision, bind_invocation, project_run
from maka_es.ledger.session import Session, project_session
from maka_es.resume.models import ResumePlan
from maka_es.resume.plan import build_resume_plan
from maka_es.tooljournal.operation import ToolOperationState
from maka_es.tooljournal.resolution import Resolution
from maka_es.wire.events import RuntimeEvent, as_runtime_event
from maka_es.wire.run_header import RunHeader, terminal_header_patch

Clock = Callable[[], float]
IdFactory = Callable[[], str]


def wall_clock_ms() -> int:
    """Default clock: integer Unix milliseconds (the RuntimeEvent ``ts`` unit)."""
    return time.time_ns() // 1_000_000


def epoch_ms(reading: float) -> int:
    """A clock reading as the integer milliseconds every library-written timestamp carries.

    Why integers: the reference writes ``Date.now()`` (whole milliseconds) into ``ts``,
    ``createdAt``, ``updatedAt``, ``completedAt`` and ``claimedAt``; a fractional value is a
    different wire fact. An injected clock may return fractions; they are floored here.
    """
    if isinstance(reading, bool) or not math.isfinite(reading):
        raise ValueError(f"the clock must return finite milliseconds, not {reading!r}")
    return math.floor(reading)


def uuid4_hex() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """Read view of a session."""

    session_id: str
    cwd: str
    workspace_identity: str | None
    opened_at: float
    run_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ToolCommit:
    """Result of T1 / T2 / a recovery bundle: ``created=False`` means an exact retry."""

    operation_id: str
    created: bool


@dataclass(frozen=True, slots=True)
class AppendResult:
    """Outcome of an append: how many events were new, how many were exact retries."""

    appended: int
    retried: int
    high_water: int


class RuntimeApplication(Application[UUID]):
    """Sessions, runs and committed RuntimeEvent ledgers on an eventsourcing store."""

    name = "maka_es"
    env: ClassVar[dict[str, str]] = {
        "PERSISTENCE_MODULE": "maka_es.adapters.sqlite",
        "SQLITE_DBNAME": "maka_es.sqlite",
        "AGGREGATE_CACHE_MAXSIZE": "256",
        "AGGREGATE_CACHE_FASTFORWARD": "y",
        "DEEPCOPY_FROM_AGGREGATE_CACHE": "n",
    }

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        clock: Clock | None = None,
        id_factory: IdFactory | None = None,
        host_inspector: HostInspector | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.clock: Clock = clock or wall_clock_ms
        self.id_factory: IdFactory = id_factory or uuid4_hex
        self.host_inspector = host_inspector
        self.telemetry = telemetry if telemetry is not None else Telemetry()
        self._recovery_status: RecoveryStatusProjector | None = None
        # Commands are pure until save; the lock keeps one instance's read-validate-save
        # sequences from interleaving on the shared aggregate cache.
        self._command_lock = threading.RLock()
        super().__init__(env)

    def now_ms(self) -> int:
        """Now, as the integer milliseconds every timestamp the library writes carries."""
        return epoch_ms(self.clock())

    # -- construction helpers -------------------------------------------------------------------

    @classmethod
    def open_sqlite(
        cls, path: str, *, read_only: bool = False, **kwargs: Any
    ) -> RuntimeApplication:
        """An application on the SQLite file ``path`` (created if missing).

        ``read_only=True`` opens the file with SQLite's ``mode=ro``: every write fails in SQLite
        itself, which makes it the guard for "planning never writes".
        """
        env = {"PERSISTENCE_MODULE": "maka_es.adapters.sqlite", "SQLITE_DBNAME": str(path)}
        if read_only:
            env["SQLITE_DBNAME"] = f"file:{path}?mode=ro"
            env["CREATE_TABLE"] = "n"
        env.update(kwargs.pop("env", None) or {})
        return cls(env=env, **kwargs)

    @classmethod
    def in_memory(cls, **kwargs: Any) -> RuntimeApplication:
        """An application on eventsourcing's in-memory store (pure unit tests only)."""
        env = {"PERSISTENCE_MODULE": "eventsourcing.popo"}
        env.update(kwargs.pop("env", None) or {})
        return cls(env=env, **kwargs)

    def construct_transcoder(self) -> Transcoder:
        return JsonTranscoder()

    def construct_mapper(self) -> Mapper[UUID]:
        return FactMapper(
            transcoder=self.construct_transcoder(),
            cipher=self.factory.cipher(),
            compressor=self.factory.compressor(),
        )

    # -- hooks ----------------------------------------------------------------------------------

    def on_events_committed(self, run_id: str, events: Sequence[RuntimeEvent]) -> None:
        """Override to observe newly committed RuntimeEvents (called after the commit)."""

    # -- loading ----------------------------------------------------------------------------------

    def _load_run(self, run_id: str) -> Run:
        try:
            run: Run = self.repository.get(run_stream_id(run_id), projector_func=project_run)
        except AggregateNotFoundError:
            raise RunNotFoundError(f"run {run_id} not found", detail={"runId": run_id}) from None
        return run

    def _load_session(self, session_id: str) -> Session:
        try:
            session: Session = self.repository.get(
                session_stream_id(session_id), projector_func=project_session
            )
        except AggregateNotFoundError:
            raise SessionNotFoundError(
                f"session {session_id} not found", detail={"sessionId": session_id}
            ) from None
        return session

    def _evict(self, *stream_ids: UUID) -> None:
        """Drop cached aggregates after a failed save: never reuse them (they may be stale)."""
        cache = self.repository.cache
        if cache is not None:
            for stream_id in stream_ids:
                with contextlib.suppress(KeyError):
                    cache.get(stream_id, evict=True)

    def commit_facts(
        self, facts: Sequence[StoredFact], *, conflict: Callable[[], Exception]
    ) -> None:
        """Save ``facts`` in ONE transaction (every command's single write).

        A uniqueness violation means another writer got there first: the involved streams are
        evicted from the cache (never reused) and ``conflict()`` classifies the refusal. Any
        other persistence failure (read-only file, locked database, disk full, the store file
        deleted or replaced) is a typed ``StoreUnavailableError`` (the SQLite store raises it
        itself; other persistence modules' errors are translated here); in both cases nothing
        of the transaction was written.
        """
        try:
            self.save(*facts)
        except IntegrityError as exc:
            self._evict(*{fact.originator_id for fact in facts})
            raise conflict() from exc
        except StoreUnavailableError:
            self._evict(*{fact.originator_id for fact in facts})
            raise
        except PersistenceError as exc:
            self._evict(*{fact.originator_id for fact in facts})
            raise StoreUnavailableError(
                f"the store refused the write: {type(exc).__name__}: {exc}",
                detail={"errorClass": type(exc).__name__},
            ) from exc

    # -- sessions ---------------------------------------------------------------------------------

    def open_session(
        self, session_id: str, cwd: str, workspace_identity: str | None = None
    ) -> SessionInfo:
        """Open a new session. Opening an existing one is refused (ids are identities)."""
        with self._command_lock:
            fact = Session.open(session_id, cwd, workspace_identity, self.now_ms())
            self.commit_facts(
                [fact],
                conflict=lambda: SessionAlreadyExistsError(
                    f"session {session_id} already exists", detail={"sessionId": session_id}
                ),
            )
            return self.get_session(session_id)

    def get_session(self, session_id: str) -> SessionInfo:
        session = self._load_session(session_id)
        return SessionInfo(
            session_id=session.session_id,
            cwd=session.cwd,
            workspace_identity=session.workspace_identity,
            opened_at=session.opened_at,
            run_ids=tuple(entry.run_id for entry in session.runs),
        )

    def list_sessions(self) -> list[str]:
        """Session ids in the order they were opened (from the notification log)."""
        return [
            fact.session_id
            for fact in self._facts_with_topic(SessionOpened.TOPIC)
            if isinstance(fact, SessionOpened)
        ]

    # -- runs -------------------------------------------------------------------------------------

    def create_run(self, header: RunHeader | Mapping[str, Any]) -> RunHeader:
        """Create a run (AgentRun header, non-terminal) in an existing session.

        One save: the run stream, the invocation binding (one run per invocation, enforced by
        the store) and the session's registration of the run.
        """
        parsed = RunHeader.decode(header)
        with self._command_lock:
            session = self._load_session(parsed.session_id)
            created_at = self.now_ms()
            created = Run.create(parsed, created_at)
            assert parsed.invocation_id is not None  # Run.create refuses headers without it
            binding = bind_invocation(parsed)
            registered = session.register_run(parsed.run_id, created_at)
            self.commit_facts(
                [created, binding, registered], conflict=lambda: self._create_run_conflict(parsed)
            )
            return parsed

    def _create_run_conflict(self, header: RunHeader) -> Exception:
        if self._stream_exists(run_stream_id(header.run_id)):
            return RunAlreadyExistsError(
                f"run {header.run_id} already exists", detail={"runId": header.run_id}
            )
        if header.invocation_id is not None and self._stream_exists(
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

    def _stream_exists(self, stream_id: UUID) -> bool:
        return bool(self.recorder.select_events(stream_id, limit=1))

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
        with self._command_lock:
            if self._stream_exists(run_stream_id(parsed.run_id)):
                existing = self._load_run(parsed.run_id)
                result = self.append_events(parsed.run_id, decoded)
                if parsed.is_terminal and not existing.header.is_terminal:
                    self.update_run_header(parsed.run_id, _terminal_patch(parsed))
                return result
            facts: list[StoredFact] = []
            try:
                session = self._load_session(parsed.session_id)
            except SessionNotFoundError:
                opened = Session.open(
                    parsed.session_id, parsed.cwd, parsed.workspace_identity, self.now_ms()
                )
                facts.append(opened)
                session = Session(opened)
            created_at = self.now_ms()
            live = parsed.model_copy(update={"status": "running"}) if parsed.is_terminal else parsed
            created = Run.create(live, created_at)
            run = project_run(None, [created])
            assert run is not None
            decision = run.decide_append(decoded, committed_at=created_at)
            for fact in decision.facts:
                run.apply(fact)
            facts += [created, *decision.facts]
            if parsed.is_terminal:
                facts.append(
                    run.decide_header_update(_terminal_patch(parsed), updated_at=created_at)
                )
            assert live.invocation_id is not None
            facts.append(bind_invocation(live))
            facts.append(session.register_run(parsed.run_id, created_at))
            self.commit_facts(facts, conflict=lambda: self._create_run_conflict(parsed))
            return AppendResult(len(decision.appended), decision.retried, run.high_water)

    def get_run_header(self, run_id: str) -> RunHeader:
        return self._load_run(run_id).header

    def list_runs(self, session_id: str) -> list[RunHeader]:
        """Headers of the session's runs in creation order."""
        session = self._load_session(session_id)
        return [self.get_run_header(entry.run_id) for entry in session.runs]

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
        with self._command_lock:
            run = self._load_run(run_id)
            decision = run.decide_append(
                decoded, committed_at=self.now_ms(), expected_high_water=expected_high_water
            )
            if decision.facts:
                self.commit_facts(
                    decision.facts,
                    conflict=lambda: ConcurrentWriteError(
                        f"run {run_id} was appended to concurrently; re-read and retry",
                        detail={"runId": run_id},
                    ),
                )
            high_water = run.high_water + len(decision.appended)
        if decision.appended:
            self.on_events_committed(run_id, decision.appended)
        return AppendResult(len(decision.appended), decision.retried, high_water)

    def append_event(
        self,
        run_id: str,
        event: RuntimeEvent | Mapping[str, Any],
        *,
        expected_high_water: int | None = None,
    ) -> AppendResult:
        return self.append_events(run_id, [event], expected_high_water=expected_high_water)

    def update_run_header(self, run_id: str, patch: Mapping[str, Any]) -> RunHeader:
        """Patch the mutable header fields. A terminal status is accepted only when the run's
        terminal RuntimeEvent is already durable and matches it."""
        with self._command_lock:
            run = self._load_run(run_id)
            fact = run.decide_header_update(patch, updated_at=self.now_ms())
            self.commit_facts(
                [fact],
                conflict=lambda: ConcurrentWriteError(
                    f"run {run_id} changed concurrently; re-read and retry",
                    detail={"runId": run_id},
                ),
            )
        return self.get_run_header(run_id)

    # -- tool journal ---------------------------------------------------------------------------

    def _commit_tool(self, run_id: str, decide: Callable[[Run], ToolCommandDecision]) -> ToolCommit:
        with self._command_lock:
            run = self._load_run(run_id)
            decision = decide(run)
            if decision.facts:
                self.commit_facts(
                    decision.facts,
                    conflict=lambda: ConcurrentWriteError(
                        f"run {run_id} was written concurrently; re-read and retry",
                        detail={"runId": run_id},
                    ),
                )
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
        return self._commit_tool(
            run_id,
            lambda run: run.decide_tool_prepared(
                event, recovery_mode=recovery_mode, committed_at=self.now_ms(), metadata=metadata
            ),
        )

    def commit_tool_outcome(
        self, run_id: str, response: RuntimeEvent | Mapping[str, Any]
    ) -> ToolCommit:
        """T2, one transaction: the response bound to its prepared operation."""
        event = as_runtime_event(response)
        return self._commit_tool(
            run_id, lambda run: run.decide_tool_outcome(event, committed_at=self.now_ms())
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
        return self._commit_tool(
            run_id,
            lambda run: run.decide_recovery_bundle(
                operation_id,
                reconcile_event,
                decision_event,
                outcome_event,
                committed_at=self.now_ms(),
            ),
        )

    def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        """Journal state of every operation of the run that crossed T1."""
        return self._load_run(run_id).tool_operations

    def resolve_run(self, run_id: str) -> Resolution:
        """The RecoveryResolver's verdict over the run's committed ledger."""
        return self._load_run(run_id).resolution()

    def end_run(self, run_id: str, terminal: RuntimeEvent | Mapping[str, Any]) -> RunHeader:
        """End a run: the terminal event is made durable FIRST, then the header derived from
        it (spec §2 ordering). If the process dies in between, startup recovery repairs the
        header from the event; a terminal header without its event never exists."""
        event = as_runtime_event(terminal)
        header = self.get_run_header(run_id)
        patch = terminal_header_patch(header, event)
        if patch is None or not event.is_terminal:
            raise TerminalConflictError(
                f"event {event.id} is not a terminal fact with a run status",
                detail={"eventId": event.id},
            )
        self.append_event(run_id, event)
        failpoints.hit(failpoints.AFTER_TERMINAL_EVENT)
        ended = self.update_run_header(run_id, patch)
        failpoints.hit(failpoints.AFTER_TERMINAL_HEADER)
        return ended

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        """The run's committed RuntimeEvents, in commit order."""
        return list(self._load_run(run_id).events)

    def run_high_water(self, run_id: str) -> int:
        return self._load_run(run_id).high_water

    def read_run_payloads(self, run_id: str) -> list[str]:
        """The stored canonical JSON of each committed event (export, digests)."""
        run = self._load_run(run_id)
        return [run.payload_at(seq) for seq in range(1, run.high_water + 1)]

    # -- Phase 0 ----------------------------------------------------------------------------------

    def plan_resume(self, run_id: str, expected_high_water: int | None = None) -> ResumePlan:
        """The Phase 0 ResumePlan of the run's committed prefix. Reads only; never writes."""
        return build_resume_plan(self.read_run_events(run_id), expected_high_water)

    # -- Phase 1: continuation planning ---------------------------------------------------------

    @property
    def safe_boundary_resume_enabled(self) -> bool:
        """``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME`` must be exactly ``1`` (env or os.environ)."""
        return self.env.get(FEATURE_FLAG) == "1"

    def plan_continuation(
        self,
        session_id: str,
        source_run_id: str | None = None,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        expected_high_water: int | None = None,
    ) -> ContinuationPlan:
        """May this session continue, and from exactly which boundary? (spec §4.2, §4.3)

        ``source_run_id`` defaults to the newest failed/cancelled session-inline run;
        ``current_cwd`` defaults to the session's cwd. ``expected_high_water`` is the caller's
        view of the source run's committed high-water (like :meth:`plan_resume`); another one
        parks ``runtime_offset_mismatch``. Reads only; never writes; a store that cannot be
        read parks (``source_run_unreadable``, ``continuation_authority_unavailable``).
        """
        if expected_high_water is not None and (
            type(expected_high_water) is not int or expected_high_water < 0
        ):
            raise InvalidPlanRequestError(
                "expected_high_water must be a non-negative integer",
                detail={"expectedHighWater": repr(expected_high_water)},
            )
        reader = RunReader(
            self.get_run_header, self.read_run_events, self._session_run_headers, self.get_claim
        )
        planner = ContinuationPlanner(
            reader,
            self.host_inspector,
            self.id_factory,
            feature_enabled=self.safe_boundary_resume_enabled,
            settings=settings,
        )
        try:
            session = self.get_session(session_id)
        except STORE_FAULTS as exc:
            plan = park(
                "source_run_unreadable",
                f"session {session_id} cannot be read: {type(exc).__name__}",
                {"sourceRunId": source_run_id or "", "errorClass": store_fault_class(exc)},
            )
        except MakaError:
            plan = park("resume_candidate_missing", f"session {session_id} does not exist")
        else:
            plan = planner.plan(
                session_id,
                current_cwd or session.cwd,
                source_run_id,
                expected_high_water=expected_high_water,
            )
        if plan.continuation is not None:
            self.telemetry.plan_approved(
                session_id=session_id,
                source_run_id=plan.continuation.source_run_id,
                target_run_id=plan.continuation.run_id,
            )
        else:
            if source_run_id is None and plan.rejection_reasons != ("resume_feature_disabled",):
                # spec §4.11: the candidate's id when there was one, '' otherwise
                candidate = planner.candidate_or_none(session_id)
                source_run_id = candidate.run_id if candidate is not None else None
            self.telemetry.plan_parked(
                session_id=session_id,
                source_run_id=source_run_id or "",
                rejection_reasons=plan.rejection_reasons,
            )
        return plan

    def execute_continuation(
        self,
        plan: ContinuationPlan,
        provider: Provider,
        *,
        current_cwd: str | None = None,
        settings: PlannerSettings | None = None,
        system_prompt: str | None = None,
    ) -> ContinuationOutcome:
        """Revalidate, claim the source boundary (one save), then call the provider.

        Raises :class:`ContinuationRevalidationError` (stable ``code``) before anything is
        written when the plan is stale or the boundary was claimed by someone else.
        """
        continuation = plan.continuation
        if continuation is None:
            raise ContinuationRevalidationError(
                "only a plan with disposition 'continue' can be executed",
                code="continuation_not_approved",
            )
        header = self.get_run_header(continuation.source_run_id)
        session = self.get_session(header.session_id)
        executor = ContinuationExecutor(
            self,
            self.host_inspector,
            self.telemetry,
            cwd_policy=(settings or PlannerSettings()).cwd_policy,
            system_prompt=system_prompt,
        )
        with self._command_lock:
            return executor.execute(
                plan,
                provider,
                session_id=header.session_id,
                current_cwd=current_cwd or session.cwd,
            )

    # -- helpers for the continuation executor ------------------------------------------------

    def claim_exists(self, claim_id: str) -> bool:
        return self._stream_exists(claim_stream_id(claim_id))

    def get_claim(self, claim_id: str) -> ContinuationClaim | None:
        try:
            claim: ContinuationClaim = self.repository.get(
                claim_stream_id(claim_id), projector_func=project_claim
            )
        except AggregateNotFoundError:
            return None
        return claim

    def run_exists(self, run_id: str) -> bool:
        return self._stream_exists(run_stream_id(run_id))

    def session_registration(self, session_id: str, run_id: str, at: float) -> StoredFact:
        """The fact registering ``run_id`` on its session (to save with other facts)."""
        return self._load_session(session_id).register_run(run_id, at)

    def _facts_with_topic(self, topic: str) -> Iterator[StoredFact]:
        """Every stored fact of one topic, in notification order (a paged log scan)."""
        start = 1
        while True:
            page = self.recorder.select_notifications(start=start, limit=500, topics=[topic])
            for notification in page:
                fact = self.mapper.to_domain_event(notification)
                assert isinstance(fact, StoredFact)
                yield fact
            if len(page) < 500:
                return
            start = page[-1].id + 1

    def all_run_ids(self) -> list[str]:
        """Every run id, in creation order (scans the notification log by topic)."""
        return [
            str(fact.header["runId"])
            for fact in self._facts_with_topic(RunCreated.TOPIC)
            if isinstance(fact, RunCreated)
        ]

    def all_claims(self) -> list[ContinuationClaim]:
        """Every continuation claim (with its recorded start, if any), in claim order."""
        claims = []
        for fact in self._facts_with_topic(ContinuationClaimed.TOPIC):
            claim = self.get_claim(fact.claim_id) if isinstance(fact, ContinuationClaimed) else None
            if claim is not None:
                claims.append(claim)
        return claims

    def continuation_start_record(
        self, claim_id: str, start: RuntimeEvent, *, start_kind: StartKind
    ) -> StoredFact:
        """The fact recording ``start`` as the start of claim ``claim_id``, committed by a
        ``start_kind`` writer (``claim_repair`` for startup recovery). Save it in the SAME
        transaction as the start fact: the claim is the authority on which writer started its
        target, and planning refuses a start the claim does not record. Raises
        ``ContinuationStartConflictError`` if the claim already recorded a start, or the start
        is not this claim's (claim id, target, ``provenance`` ≠ ``start_kind``)."""
        claim = self.get_claim(claim_id)
        if claim is None:
            raise ContinuationStartConflictError(
                f"claim {claim_id} does not exist", detail={"claimId": claim_id}
            )
        return claim.record_start(start, start_kind)

    def create_claimed_run(
        self, header: RunHeader, start: RuntimeEvent, *, start_kind: StartKind | None = None
    ) -> None:
        """Create a claimed continuation's target run with its start fact, and record the
        start's kind with the claim, in one save (claim repair). ``start_kind`` defaults to the
        kind the start itself declares (its ``provenance``)."""
        assert header.invocation_id is not None
        fact = start.actions.continuation_start if start.actions is not None else None
        if fact is None:
            raise ReservedFactError(
                f"event {start.id} is not a continuation-start fact", detail={"eventId": start.id}
            )
        with self._command_lock:
            facts = [
                *Run.create_continuation(header, start, created_at=header.created_at),
                self.continuation_start_record(
                    fact.claim_id, start, start_kind=start_kind or fact.provenance
                ),
                bind_invocation(header),
                self.session_registration(header.session_id, header.run_id, header.created_at),
            ]
            self.commit_facts(facts, conflict=lambda: self._create_run_conflict(header))

    def start_claimed_run(self, run_id: str, start: RuntimeEvent) -> None:
        """Commit the claim-repair start of a claimed target that was created but never
        started, and record its kind (``claim_repair``) with the claim, in one save (claim
        repair); an exact retry writes nothing."""
        fact = start.actions.continuation_start if start.actions is not None else None
        if fact is None:
            raise ReservedFactError(
                f"event {start.id} is not a continuation-start fact", detail={"eventId": start.id}
            )
        with self._command_lock:
            run = self._load_run(run_id)
            decision = run.decide_claim_repair_start(start, committed_at=self.now_ms())
            if decision.facts:
                record = self.continuation_start_record(
                    fact.claim_id, start, start_kind="claim_repair"
                )
                self.commit_facts(
                    [*decision.facts, record],
                    conflict=lambda: ConcurrentWriteError(
                        f"run {run_id} was appended to concurrently; re-read and retry",
                        detail={"runId": run_id},
                    ),
                )

    @property
    def recovery_status(self) -> RecoveryStatusProjector:
        """The persisted read model of every run's recovery status (created on first use).

        The event store is read first: a store that is unusable (schema missing, file gone)
        refuses with its typed error before the read model creates anything in the file.
        """
        if self._recovery_status is None:
            self.recorder.max_notification_id()
            self._recovery_status = RecoveryStatusProjector(self)
        return self._recovery_status

    def recover(self, *, tool_runtime: ToolRuntime | None = None) -> StartupRecoveryReport:
        """Startup recovery (spec §4.8): see ``maka_es.recovery.startup``.

        Only the runs the recovery-status read model marks as needing attention are touched;
        the read model is caught up first and again afterwards.
        """
        attention = self.recovery_status.needing_attention()
        run_ids = [row.run_id for row in attention if row.header_status != "missing"]
        claim_ids = sorted(
            {row.claim_id for row in attention if row.claim_state == "unstarted" and row.claim_id}
        )
        report = StartupRecovery(self, tool_runtime).run(run_ids, claim_ids)
        self.recovery_status.catch_up()
        return report

    def close(self) -> None:
        if self._recovery_status is not None:
            self._recovery_status.close()
            self._recovery_status = None
        super().close()

    def _session_run_headers(self, session_id: str) -> list[RunHeader]:
        return self.list_runs(session_id)


def _terminal_patch(header: RunHeader) -> dict[str, Any]:
    """The mutable terminal fields of an imported header, as a header patch."""
    wire = header.to_wire()
    return {
        key: wire[key]
        for key in (
            "status",
            "updatedAt",
            "completedAt",
            "failureClass",
            "failureMessage",
            "abortSource",
        )
        if key in wire
    }
