"""RuntimeApplication: the composition root of maka_es.

Why it holds an ``eventsourcing.Application`` instead of being one (ADR 0039): the library
gives the recorder (SQLite, PostgreSQL, in-memory), optimistic concurrency on
``(originator_id, originator_version)`` and the notification log, but its public names
(``save``, ``repository``, ``take_snapshot``, ``recorder``) would write or hand out cached
aggregates past maka_es's write rules. This class builds the services once, on one store
adapter, and delegates to them; it holds no domain rule of its own (ADR 0017):

* :class:`~maka_es.continuation.turns.Turns` (``run_turn``) and
  :class:`~maka_es.recovery.session_resume.SessionResume` (``resume``): a host's whole turn on
  the agent loop, and its interrupted turn continued or its park explained (ADR 0036);
* :class:`~maka_es.continuation.service.Continuations` (planning and continuing, Phase 1),
  :class:`~maka_es.recovery.operator_actions.OperatorActions` and
  :class:`~maka_es.recovery.startup.StartupRecovery` over the recovery-status read model.

The host's verbs (about 25, ``maka_es.app_api``) are on the application itself. The plumbing
is on documented service attributes, one per concern (ADR 0039):

* ``app.ledger`` (:class:`~maka_es.ledger.service.Ledger`): raw appends (``append_events``,
  ``append_event``), ``create_run``, ``import_run``, ``update_run_header``,
  ``run_high_water``, ``read_run_payloads``, ``all_run_ids``, ``list_all_runs``;
* ``app.run_starts`` (:class:`~maka_es.ledger.run_start.RunStarts`): ``create_run_with_events``;
* ``app.tool_journal`` (:class:`ToolJournalService`): T1, T2, recovery bundles, ``tool_operations``,
  ``resolve_run``, ``attestations`` (what ``app.tool_runtime`` runs on);
* ``app.claims`` (:class:`~maka_es.continuation.claims.Claims`): the continuation claims;
* ``app.ownership`` (:class:`~maka_es.ledger.host_leases.HostLeases`): ``lease(host_id)``;
* ``app.run_forks`` (:class:`~maka_es.recovery.operator_actions.RunForks`): a fork's ``provenance``;
* ``app.recovery_status``: the persisted read model of every run's recovery status.

Every command validates against the current aggregates *before* anything is written, then
commits all of its facts in ONE transaction; a refused command leaves the store unchanged.

Extension points for a host (constructor arguments, or a subclass):

* ``clock`` — milliseconds since the epoch; default wall clock. Every timestamp the library
  writes is :meth:`now_ms`: the clock's reading floored to integer milliseconds.
* ``id_factory`` — fresh ids for facts the runtime authors itself; default uuid4 hex.
* ``host_inspector`` — the host's safety facts for continuation planning (Phase 1).
* ``telemetry`` — lifecycle events (identities and codes only); default: standard logging.
* ``tools`` — the host's tool catalogue, given once: the application builds its own
  :class:`~maka_es.tooljournal.runtime.ToolRuntime` (``app.tool_runtime``, with
  ``tool_permission`` as its permission policy), and startup recovery settles interrupted tool
  operations with it before it ends any run (ADR 0019).
* ``host_config`` — the run-header fields constant for this host (:class:`HostConfig`):
  ``start_run`` creates a run from it, ``open_session`` resolves the workspace identity of
  the cwd through ``workspace_resolver`` (default with a host config: the marker,
  ``.maka-workspace.json``), and the default ``host_inspector`` is a ``LocalHostInspector``
  over the application's own tool catalogue. ``safe_boundary_resume=True`` enables Phase 1
  continuation on this application (else ``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME=1``).
* ``host_id`` and ``lease_ms`` — this host's identity and lease duration (ADR 0021; env
  ``MAKA_HOST_ID`` / ``MAKA_HOST_LEASE_MS``; default ``local`` and 30 s). Every run this host
  creates records it as owner; recovery leaves another host's runs alone while its lease is
  live (creating a run renews the lease when due). Several processes on one store each pass
  their own host id, stable across restarts, and call :meth:`heartbeat` more often than
  ``lease_ms`` while they have live runs (from their loop or a timer thread).
* :meth:`on_events_committed` — called after a successful append (e.g. to wake a UI).

The store comes from the environment (``env=`` or ``os.environ``): by default
``PERSISTENCE_MODULE=maka_es.adapters.sqlite`` (SQLite, WAL, ``synchronous=FULL``) and
``SQLITE_DBNAME=maka_es.sqlite``; ``eventsourcing.popo`` is the in-memory store for unit tests;
``maka_es.adapters.postgres`` (or ``eventsourcing.postgres``) with ``POSTGRES_*`` is PostgreSQL,
also chosen by :meth:`open` with a ``postgresql://`` URL (ADR 0028).
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, cast

from eventsourcing.utils import Environment

from maka_es.adapters.event_store import (
    READ_ONLY_ENV,
    EventSourcedRunStore,
    EventStoreApplication,
    is_postgres_url,
    postgres_env_from_url,
    sqlite_path_of,
)
from maka_es.adapters.recovery_status import recovery_status_store_for
from maka_es.adapters.workspace import LocalHostInspector, workspace_identity_of
from maka_es.app_api import EventInput, RuntimeApi
from maka_es.continuation.claims import Claims
from maka_es.continuation.host import HostInspector
from maka_es.continuation.service import FEATURE_FLAG, Continuations
from maka_es.continuation.turns import Turns
from maka_es.errors import StorePathError
from maka_es.ledger.host_leases import DEFAULT_HOST_ID, DEFAULT_LEASE_MS, HostLeases
from maka_es.ledger.model.host_config import HostConfig
from maka_es.ledger.service import (
    AppendResult,
    HostSessions,
    Ledger,
    RunStarts,
    SessionInfo,
    ToolCommands,
    ToolCommit,
    WorkspaceResolver,
)
from maka_es.recovery.operator_actions import (
    EndRunOutcome,
    OperatorActions,
    RunForks,
    end_start_only_run,
)
from maka_es.recovery.session_resume import SessionResume
from maka_es.recovery.startup import StartupRecovery, StartupRecoveryOutcome
from maka_es.recovery.status import (
    RecoveryStatusProjector,
    RecoveryStatusStore,
)
from maka_es.telemetry import Telemetry
from maka_es.tooljournal.model.attestation import OperatorAttestation
from maka_es.tooljournal.model.operation import ToolOperationState
from maka_es.tooljournal.model.resolver import Resolution
from maka_es.tooljournal.runtime import PermissionPolicy, Tool, ToolRuntime
from maka_es.wire.events import RuntimeEvent

__all__ = ["AppendResult", "HostConfig", "RuntimeApplication", "SessionInfo", "ToolJournalService"]

Clock = Callable[[], float]
IdFactory = Callable[[], str]


def wall_clock_ms() -> int:
    """Default clock: integer Unix milliseconds (the RuntimeEvent ``ts`` unit)."""
    return time.time_ns() // 1_000_000


def uuid4_hex() -> str:
    return uuid.uuid4().hex


class RuntimeApplication(RuntimeApi):
    """Sessions, runs and committed RuntimeEvent ledgers on an eventsourcing store.

    Store internals (ADR 0039): ``_es`` is the eventsourcing application this one holds
    (:class:`~maka_es.adapters.event_store.EventStoreApplication`: ``recorder``, ``mapper``,
    ``factory``, ``events``), and ``_store`` the ``RunStore`` adapter over it. Both are for
    maka_es's adapters, its testing kit and its tests; a host never needs them, and writing
    through them bypasses every write rule.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        clock: Clock | None = None,
        id_factory: IdFactory | None = None,
        host_inspector: HostInspector | None = None,
        telemetry: Telemetry | None = None,
        tools: Iterable[Tool[Any]] = (),
        tool_permission: PermissionPolicy | None = None,
        host_id: str | None = None,
        lease_ms: int | None = None,
        host_config: HostConfig | None = None,
        workspace_resolver: WorkspaceResolver | None = None,
        safe_boundary_resume: bool | None = None,
    ) -> None:
        self.clock: Clock = clock or wall_clock_ms
        self.id_factory: IdFactory = id_factory or uuid4_hex
        self.host_inspector = host_inspector
        self._safe_boundary_resume = safe_boundary_resume
        self.telemetry = telemetry if telemetry is not None else Telemetry()
        self._recovery_status: RecoveryStatusProjector | None = None
        #: The eventsourcing application (store internals; see the class docstring).
        self._es = EventStoreApplication(env)
        self._store = EventSourcedRunStore(self._es, lambda: self.clock())
        self.ownership = HostLeases(
            self._store,
            host_id or self.env.get("MAKA_HOST_ID") or DEFAULT_HOST_ID,
            lease_ms
            if lease_ms is not None
            else int(self.env.get("MAKA_HOST_LEASE_MS") or DEFAULT_LEASE_MS),
        )
        self.ledger = Ledger(self._store, self.on_events_committed, self.ownership)
        self._tool_commands = ToolCommands(self._store, self.ownership)
        #: The tool journal: T1, T2, recovery bundles and the run's operations (ADR 0007).
        self.tool_journal = ToolJournalService(self._tool_commands, self.ledger)
        #: Runs this host's tools through T1/T2; startup recovery settles with its catalogue.
        self.tool_runtime = ToolRuntime(self.tool_journal, tools, permission=tool_permission)
        if workspace_resolver is None and host_config is not None:
            workspace_resolver = workspace_identity_of
        self._host_sessions = HostSessions(
            self.ledger, host_config, workspace_resolver, lambda: self.id_factory(), self.now_ms
        )
        if host_inspector is None and workspace_resolver is not None:
            host_inspector = LocalHostInspector.from_tool_runtime(self.tool_runtime)
            self.host_inspector = host_inspector
        self.claims = Claims(self.ledger, self._store)
        self._continuations = Continuations(
            self.claims,
            host_inspector,
            self.telemetry,
            lambda: self.id_factory(),
            self.tool_runtime,
            feature_enabled=lambda: self.safe_boundary_resume_enabled,
        )
        self._build_operator_and_turns()

    def _build_operator_and_turns(self) -> None:
        """The operator's actions and forks, a host's turn (``run_turn``) and ``resume``, over
        the services built above (ADR 0022, ADR 0036)."""
        self._operator_actions = OperatorActions(
            self.ledger, self._tool_commands, self.telemetry, self._recover_one_run
        )
        self.run_forks = RunForks(
            self.claims,
            self._store,
            lambda: self.id_factory(),
            self.telemetry,
            self.tool_runtime,
            end_source=lambda run_id: StartupRecovery(self.claims).end_forked_source(run_id),
        )
        self.run_starts = RunStarts(self._store, self.ledger, self.on_events_committed)
        self._turns = Turns(self.ledger, self.run_starts, self._host_sessions, self.tool_runtime)
        self._session_resume = SessionResume(self.ledger, self._continuations, self.run_forks)

    # -- construction ------------------------------------------------------------------------------

    @classmethod
    def open(cls, store: str, **kwargs: Any) -> RuntimeApplication:
        """An application on the store named by one setting (ADR 0028): a PostgreSQL URL
        (``postgresql://user:pw@host:port/db``, see ``maka_es.adapters.event_store``) or else a
        SQLite path or ``sqlite:///PATH`` (``open_sqlite``); another URL scheme is
        ``store_path_unusable``. ``read_only=True`` makes every write fail in the store
        itself: SQLite's ``mode=ro``, or PostgreSQL's ``default_transaction_read_only`` on every
        connection (a write is then a typed ``store_unavailable``)."""
        if not is_postgres_url(store):
            return cls.open_sqlite(sqlite_path_of(store), **kwargs)
        env = postgres_env_from_url(store)
        if kwargs.pop("read_only", False):
            env.update({READ_ONLY_ENV: "y", "CREATE_TABLE": "n"})
        env.update(kwargs.pop("env", None) or {})
        return cls(env=env, **kwargs)

    @classmethod
    def open_sqlite(
        cls, path: str, *, read_only: bool = False, **kwargs: Any
    ) -> RuntimeApplication:
        """An application on the SQLite file ``path`` (created if missing).

        ``read_only=True`` opens the file with SQLite's ``mode=ro``: every write fails in SQLite
        itself, which makes it the guard for "planning never writes".
        """
        if not str(path).strip():
            # eventsourcing would read an empty name as "no setting" and raise a bare OSError.
            raise StorePathError(
                "cannot open or create a SQLite store at '': the store path is empty",
                detail={"path": str(path), "reason": "path_empty"},
            )
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

    @property
    def env(self) -> Environment:
        """The store settings this application was opened with (class defaults, then
        ``os.environ``, then ``env=``), as eventsourcing reads them."""
        return cast(Environment, self._es.env)

    def now_ms(self) -> int:
        """Now, as the integer milliseconds every timestamp the library writes carries."""
        return self._store.now_ms()

    def on_events_committed(self, run_id: str, events: Sequence[RuntimeEvent]) -> None:
        """Override to observe newly committed RuntimeEvents (called after the commit)."""

    @property
    def safe_boundary_resume_enabled(self) -> bool:
        """``safe_boundary_resume=`` when given, else ``MAKA_RUNTIME_SAFE_BOUNDARY_RESUME`` must
        be exactly ``1`` (env or os.environ)."""
        if self._safe_boundary_resume is not None:
            return self._safe_boundary_resume
        return self.env.get(FEATURE_FLAG) == "1"

    # -- startup recovery --------------------------------------------------------------------------

    def recovery_status_projector(
        self, store: RecoveryStatusStore | None = None, **options: Any
    ) -> RecoveryStatusProjector:
        """A projector of this store's recovery-status read model (``store``: the default one
        that belongs with the event store, e.g. the same SQLite file).

        The event store is read first: a store that is unusable (schema missing, file gone)
        refuses with its typed error before the read model creates anything in the file.
        """
        self._es.recorder.max_notification_id()
        chosen = store if store is not None else recovery_status_store_for(self._es.recorder)
        return RecoveryStatusProjector(self._store, chosen, **options)

    @property
    def recovery_status(self) -> RecoveryStatusProjector:
        """The persisted read model of every run's recovery status (created on first use)."""
        if self._recovery_status is None:
            self._recovery_status = self.recovery_status_projector()
        return self._recovery_status

    def end_start_only_run(self, run_id: str) -> EndRunOutcome:
        """End one continuation or fork that holds only its start and whose process is gone
        (its owner's lease is not live), with startup recovery's terminal (ADR 0035); a typed
        ``RunEndRefusedError`` otherwise, nothing written."""
        return end_start_only_run(self.claims, run_id)

    def recover(
        self,
        *,
        tool_runtime: ToolRuntime | None = None,
        end_start_only_continuations: bool = True,
    ) -> StartupRecoveryOutcome:
        """Startup recovery (docs/reference/continuation.md#startup-recovery; ADR 0019).

        Interrupted tool operations are settled with the application's own catalogue
        (``tools=`` at construction) before any run is ended, and a run whose operation only
        a missing tool could settle is left unsealed (``left_unreconciled``). ``tool_runtime``
        replaces that catalogue for this call (kept for hosts written before ``tools=``).
        Only the runs the recovery-status read model marks as needing attention are touched;
        the read model is caught up first and again afterwards. Only runs whose owning process
        is gone are ended: a run this instance holds (any thread may be running it) is left
        alone (``left_own_live_run``), so a live host may call this periodically to sweep for
        dead hosts' runs; another host's run is ended only once its owner's lease expired,
        after taking it over (ADR 0021). A continuation or fork killed before it committed
        anything past its start is ended once its owner is gone, and the session continues
        from its boundary (ADR 0035); ``end_start_only_continuations=False`` keeps the
        reference's rule (left alone, planning parks ``continuation_started_indeterminate``).
        """
        attention = self.recovery_status.needing_attention()
        run_ids = [row.run_id for row in attention if row.header_status != "missing"]
        claim_ids = sorted(
            {row.claim_id for row in attention if row.claim_state == "unstarted" and row.claim_id}
        )
        runtime = tool_runtime if tool_runtime is not None else self.tool_runtime
        report = StartupRecovery(
            self.claims, runtime, end_start_only_continuations=end_start_only_continuations
        ).run(run_ids, claim_ids)
        self.recovery_status.catch_up()
        return report

    def _recover_one_run(self, run_id: str) -> StartupRecoveryOutcome:
        """Startup recovery of ``run_id`` alone, with the application's catalogue: how an
        attestation finishes the recovery of a run that awaited it (ADR 0022 amendment)."""
        return StartupRecovery(self.claims, self.tool_runtime).run([run_id], [])

    # -- lifecycle ---------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the recovery-status read model and the store's connections."""
        if self._recovery_status is not None:
            self._recovery_status.close()
            self._recovery_status = None
        self._es.close()

    def __enter__(self) -> Self:
        self._es.factory.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        self.close()
        self._es.factory.__exit__(exc_type, exc_val, exc_tb)

    def __del__(self) -> None:
        with contextlib.suppress(AttributeError):
            self.close()


class ToolJournalService:
    """The tool journal of one application: what :class:`ToolRuntime` and a host's own tool
    loop call (the ``ToolJournalStore`` port), over the services that own the rules.

    Why an adapter and not the application: the runtime needs T1, T2, the recovery bundle,
    the run's operations and the generic append and read of a pre-T1 refusal (ADR 0007), not
    a host object of ~25 verbs; the tests may pass any object with these methods.
    """

    def __init__(self, commands: ToolCommands, ledger: Ledger) -> None:
        self._commands = commands
        self._ledger = ledger

    def now_ms(self) -> int:
        """The clock every library-written timestamp reads."""
        return self._ledger.now_ms()

    def commit_tool_prepared(
        self,
        run_id: str,
        call: EventInput,
        *,
        recovery_mode: str = "never_auto_retry",
        metadata: Mapping[str, Any] | None = None,
    ) -> ToolCommit:
        """T1: the call and its dispatch in one transaction (``created=False``: an exact retry,
        the tool must not run)."""
        return self._commands.commit_tool_prepared(
            run_id, call, recovery_mode=recovery_mode, metadata=metadata
        )

    def commit_tool_outcome(self, run_id: str, response: EventInput) -> ToolCommit:
        """T2: the response bound to its dispatched operation."""
        return self._commands.commit_tool_outcome(run_id, response)

    def commit_tool_recovery_bundle(
        self,
        run_id: str,
        operation_id: str,
        *,
        reconcile: EventInput,
        decision: EventInput,
        outcome: EventInput | None = None,
    ) -> ToolCommit:
        """A recovery bundle (reconcile result, decision, optional outcome) in one transaction."""
        return self._commands.commit_tool_recovery_bundle(
            run_id, operation_id, reconcile=reconcile, decision=decision, outcome=outcome
        )

    def tool_operations(self, run_id: str) -> tuple[ToolOperationState, ...]:
        """The run's tool operations and their journal states."""
        return self._commands.tool_operations(run_id)

    def resolve_run(self, run_id: str) -> Resolution:
        """The resolver's decision for every operation of the run (reads only)."""
        return self._commands.resolve_run(run_id)

    def attestations(self, run_id: str) -> tuple[OperatorAttestation, ...]:
        """The operator attestations recorded on the run (ADR 0022)."""
        return self._commands.attestations(run_id)

    def append_events(
        self, run_id: str, events: Iterable[EventInput], *, expected_high_water: int | None = None
    ) -> AppendResult:
        """The ledger's generic append (a pre-T1 refusal's call and error response)."""
        return self._ledger.append_events(run_id, events, expected_high_water=expected_high_water)

    def read_run_events(self, run_id: str) -> list[RuntimeEvent]:
        """The run's committed events (recovery reads its calls)."""
        return self._ledger.read_run_events(run_id)
