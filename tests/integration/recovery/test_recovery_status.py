"""Recovery-status read model: one row per run, maintained from the notification log.

What is pinned here, on real SQLite files: the row of each kind of run startup recovery cares
about (completed, running, terminal event with a lagging header, unsettled T1, claimed targets
that never started / started / ended, sealed sources); that incremental maintenance equals a
rebuild from scratch (Hypothesis, random commands with catch-ups at random points); that a
catch-up is idempotent, recomputes only the runs that changed, writes rows and position in one
transaction, continues from the persisted position after a reopen, and that two projectors on
one file do not overwrite each other's newer rows.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maka_es import failpoints
from maka_es.adapters.event_store import is_postgres_url, postgres_env_from_url
from maka_es.adapters.recovery_status import (
    PostgresRecoveryStatusBackend,
    SqliteRecoveryStatusBackend,
    recovery_status_store_for,
)
from maka_es.adapters.sqlite import sqlite_path_from_dbname
from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import (
    ContinuationClaim,
    ContinuationTarget,
    SourceBoundary,
    continuation_header,
    continuation_start_event,
)
from maka_es.errors import MakaError
from maka_es.recovery.model.status_store import (
    INSIDE_COMMIT_FAILPOINT,
    InMemoryRecoveryStatusBackend,
)
from maka_es.recovery.status import (
    RecoveryStatusConflictError,
    RecoveryStatusProjector,
    RecoveryStatusStore,
    RunRecoveryStatus,
)
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from maka_es.testing.probes import commit_unchecked
from tests.support.run_loads import count_loads

DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def open_status_store(store_url: str) -> RecoveryStatusStore:
    """The read model on the store ``store_url`` names (SQLite file or PostgreSQL schema)."""
    if is_postgres_url(store_url):
        backend = PostgresRecoveryStatusBackend.from_env(postgres_env_from_url(store_url))
        return RecoveryStatusStore(backend)
    return RecoveryStatusStore(SqliteRecoveryStatusBackend(store_url))


def spine(run_id: str) -> Spine:
    return Spine(session_id="s1", invocation_id=f"i-{run_id}", run_id=run_id, turn_id=f"t-{run_id}")


def start_run(app: RuntimeApplication, run_id: str) -> LedgerBuilder:
    """A running run whose first event declares the tool-boundary protocol."""
    app.ledger.create_run(run_header(spine(run_id)))
    ledger = LedgerBuilder(spine(run_id), prefix=f"{run_id}-e")
    ledger.user(marker=True)
    app.ledger.append_events(run_id, ledger.events)
    return ledger


def boundary_of(source_run_id: str, high_water: int = 1) -> SourceBoundary:
    return SourceBoundary(
        session_id="s1",
        invocation_id=f"i-{source_run_id}",
        run_id=source_run_id,
        turn_id=f"t-{source_run_id}",
        high_water=high_water,
        prefix_digest=DIGEST_A,
        manifest_digest=DIGEST_B,
        provider_replay_digest=DIGEST_A,
    )


def save_claim(
    app: RuntimeApplication, source_run_id: str, target_run_id: str, high_water: int = 1
) -> str:
    """A hand-made claim fact (what the executor writes first), without its target run."""
    boundary = boundary_of(source_run_id, high_water)
    target = ContinuationTarget(f"i-{target_run_id}", target_run_id, f"t-{target_run_id}")
    commit_unchecked(
        app, ContinuationClaim.create(boundary, target, f"{target_run_id}-start", 2000.0)
    )
    return boundary.claim_id


@pytest.fixture
def app(store_app: RuntimeApplication) -> RuntimeApplication:
    store_app.open_session("s1", "/workspace")
    return store_app


@pytest.fixture
def store(store_url: str, app: RuntimeApplication) -> Iterator[RecoveryStatusStore]:
    store = open_status_store(store_url)
    yield store
    store.close()


@pytest.fixture
def projector(app: RuntimeApplication, store: RecoveryStatusStore) -> RecoveryStatusProjector:
    return app.recovery_status_projector(store)


@pytest.fixture(autouse=True)
def _disarm_failpoints() -> Iterator[None]:
    yield
    failpoints.disarm()


def row(projector: RecoveryStatusProjector, run_id: str) -> RunRecoveryStatus:
    status = projector.status(run_id)
    assert status is not None
    return status


# --- rows --------------------------------------------------------------------------------------


def test_completed_run_needs_no_attention(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    app.ledger.append_events("r1", [ledger.text(), ledger.terminal("completed")])
    app.ledger.update_run_header("r1", {"status": "completed", "completedAt": 1003})
    assert row(projector, "r1") == RunRecoveryStatus(
        run_id="r1",
        session_id="s1",
        header_status="completed",
        terminal_event=True,
        header_matches_terminal=True,
        resume_disposition="safe_replay",
        resume_reasons=(),
        unsettled_operations=0,
        claim_state="none",
        claim_id=None,
        sealed_by=None,
        high_water=3,
        needs_attention=False,
    )
    assert projector.needing_attention() == []


def test_failed_run_with_matching_header_needs_no_attention(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    app.ledger.append_events("r1", [ledger.terminal("failed")])
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    status = row(projector, "r1")
    assert (status.header_status, status.header_matches_terminal) == ("failed", True)
    assert not status.needs_attention


def test_running_run_needs_attention(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    app.ledger.append_events("r1", [ledger.text()])
    status = row(projector, "r1")
    assert status.header_status == "running"
    assert (status.terminal_event, status.header_matches_terminal) == (False, False)
    assert (status.claim_state, status.high_water) == ("none", 2)
    assert status.needs_attention
    assert projector.needing_attention() == [status]


def test_terminal_event_with_lagging_header_needs_attention(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    app.ledger.append_events("r1", [ledger.terminal("completed")])
    status = row(projector, "r1")
    assert status.header_status == "running"
    assert status.terminal_event
    assert not status.header_matches_terminal
    assert status.needs_attention
    app.ledger.update_run_header("r1", {"status": "completed"})  # the repair startup recovery makes
    assert not row(projector, "r1").needs_attention


def test_unsettled_t1_operation_blocks_resume(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    call = ledger.call("c1", "Echo", {"text": "hi"})
    commit = app.tool_journal.commit_tool_prepared("r1", call)
    status = row(projector, "r1")
    assert status.unsettled_operations == 1
    assert status.resume_disposition == "blocked"
    assert status.resume_reasons == tuple(app.plan_resume("r1").rejection_reasons)
    assert status.resume_reasons  # Phase 0 says why
    assert status.needs_attention
    response = ledger.response(
        "c1", "Echo", refs={"operationId": commit.operation_id, "toolCallId": "c1"}
    )
    app.tool_journal.commit_tool_outcome("r1", response)
    settled = row(projector, "r1")
    assert settled.unsettled_operations == 0
    assert settled.resume_disposition == app.plan_resume("r1").disposition


def test_claim_without_target_run_is_unstarted_and_missing(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    app.ledger.append_events("r1", [ledger.terminal("failed")])
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    claim_id = save_claim(app, "r1", "r2")
    status = row(projector, "r2")
    assert status == RunRecoveryStatus(
        run_id="r2",
        session_id="s1",
        header_status="missing",
        terminal_event=False,
        header_matches_terminal=False,
        resume_disposition=None,
        resume_reasons=(),
        unsettled_operations=0,
        claim_state="unstarted",
        claim_id=claim_id,
        sealed_by=None,
        high_water=0,
        needs_attention=True,
    )
    assert [s.run_id for s in projector.needing_attention()] == ["r2"]


def test_claim_of_unknown_source_gives_the_source_no_row(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    save_claim(app, "ghost", "r2")
    assert [s.run_id for s in projector.all()] == ["r2"]


def test_claimed_target_goes_unstarted_started_ended(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    ledger = start_run(app, "r1")
    app.ledger.append_events("r1", [ledger.terminal("failed")])
    app.ledger.update_run_header("r1", {"status": "failed", "failureClass": "provider_error"})
    boundary = boundary_of("r1", high_water=2)
    target = ContinuationTarget("i-r2", "r2", "t-r2")
    start = continuation_start_event(boundary, target, event_id="r2-start", ts=2000.0)
    source = app._store.load_run("r1")
    seal = source.decide_seal(boundary.claim_id, sealed_at=2000.0)
    commit_unchecked(app, ContinuationClaim.create(boundary, target, start.id, 2000.0), seal)
    assert row(projector, "r2").claim_state == "unstarted"
    assert row(projector, "r1").sealed_by == boundary.claim_id

    header = continuation_header(
        app.get_run_header("r1"), boundary, target, workspace_identity="ws", claimed_at=2000.0
    )
    app.claims.create_claimed_run(header, start)
    started = row(projector, "r2")
    assert (started.claim_state, started.header_status) == ("started", "created")
    assert started.claim_id == boundary.claim_id
    assert started.needs_attention  # a live start: recovery must look (and leave it alone)

    follow = LedgerBuilder(spine("r2"), prefix="r2-e")
    app.ledger.append_events("r2", [follow.terminal("completed")])
    ended = row(projector, "r2")
    assert ended.claim_state == "ended"
    assert ended.needs_attention  # header still lags
    app.ledger.update_run_header("r2", {"status": "completed"})
    assert not row(projector, "r2").needs_attention
    assert projector.needing_attention() == []


def test_rows_are_json_round_trippable(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    start_run(app, "r1")
    save_claim(app, "r1", "r2")
    for status in projector.all():
        assert RunRecoveryStatus.from_json(status.to_json()) == status


def test_a_row_cannot_contradict_its_verdict() -> None:
    with pytest.raises(ValueError, match="needs_attention"):
        RunRecoveryStatus(
            run_id="r1",
            session_id="s1",
            header_status="running",
            terminal_event=False,
            header_matches_terminal=False,
            resume_disposition="safe_replay",
            resume_reasons=(),
            unsettled_operations=0,
            claim_state="none",
            claim_id=None,
            sealed_by=None,
            high_water=1,
            needs_attention=False,
        )


# --- maintenance -------------------------------------------------------------------------------


def test_catch_up_is_idempotent(
    app: RuntimeApplication, projector: RecoveryStatusProjector
) -> None:
    start_run(app, "r1")
    first = projector.catch_up()
    assert first == app._es.recorder.max_notification_id()
    assert projector.store.position() == first
    assert projector.catch_up() == 0
    assert projector.catch_up() == 0


def test_catch_up_pages_through_the_log(app: RuntimeApplication, store_url: str) -> None:
    for index in range(4):
        start_run(app, f"r{index}")
    store = open_status_store(store_url)
    paged = app.recovery_status_projector(store, page_size=3)
    total = app._es.recorder.max_notification_id()
    assert paged.catch_up() == total
    fresh = app.recovery_status_projector(RecoveryStatusStore(InMemoryRecoveryStatusBackend()))
    fresh.rebuild()
    assert paged.all() == fresh.all()
    store.close()


def test_only_affected_runs_are_recomputed(
    app: RuntimeApplication, projector: RecoveryStatusProjector, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledgers = {f"r{index}": start_run(app, f"r{index}") for index in range(12)}
    projector.catch_up()
    loaded = count_loads(app, monkeypatch)
    assert projector.catch_up() == 0
    assert loaded == []

    monkeypatch.undo()
    app.ledger.append_events("r7", [ledgers["r7"].text()])
    loaded = count_loads(app, monkeypatch)
    assert projector.catch_up() == 1
    assert loaded == ["r7"]
    assert row(projector, "r7").high_water == 2


def test_rows_and_position_commit_in_one_transaction(
    app: RuntimeApplication, projector: RecoveryStatusProjector, store_url: str
) -> None:
    start_run(app, "r1")
    store = projector.store
    seen_inside: list[tuple[int, list[str]]] = []

    def crash(_: str) -> None:
        seen_inside.append((store.position(), [s.run_id for s in store.all()]))
        raise RuntimeError("crash inside the read-model transaction")

    failpoints.arm(INSIDE_COMMIT_FAILPOINT, crash)
    with pytest.raises(RuntimeError, match="crash inside"):
        projector.catch_up()
    # Inside the transaction the rows and the position were written ...
    assert seen_inside == [(app._es.recorder.max_notification_id(), ["r1"])]
    # ... and after the failure neither is there, for this connection or a new one.
    assert (store.position(), store.all()) == (0, [])
    reopened = open_status_store(store_url)
    assert (reopened.position(), reopened.all()) == (0, [])
    assert reopened.stream_run_ids([app._store.load_run("r1").id]) == {}

    failpoints.disarm(INSIDE_COMMIT_FAILPOINT)
    assert projector.catch_up() == app._es.recorder.max_notification_id()
    assert [s.run_id for s in reopened.all()] == ["r1"]
    reopened.close()


def test_in_memory_store_commit_is_atomic_too(app: RuntimeApplication) -> None:
    start_run(app, "r1")
    store = RecoveryStatusStore(InMemoryRecoveryStatusBackend())
    projector = app.recovery_status_projector(store)

    def crash(_: str) -> None:
        raise RuntimeError("crash")

    failpoints.arm(INSIDE_COMMIT_FAILPOINT, crash)
    with pytest.raises(RuntimeError):
        projector.catch_up()
    assert (store.position(), store.all()) == (0, [])
    failpoints.disarm()
    assert projector.catch_up() > 0
    assert [s.run_id for s in store.all()] == ["r1"]


def test_reopen_continues_from_the_persisted_position(
    store_url: str, clock: Callable[[], float], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = RuntimeApplication.open(store_url, clock=clock)
    first.open_session("s1", "/workspace")
    ledgers = {run_id: start_run(first, run_id) for run_id in ("r1", "r2", "r3")}
    first_store = open_status_store(store_url)
    first_projector = first.recovery_status_projector(first_store)
    first_projector.catch_up()
    position, rows = first_store.position(), first_store.all()
    first_store.close()
    first.close()

    app = RuntimeApplication.open(store_url, clock=clock)
    try:
        store = open_status_store(store_url)
        assert (store.position(), store.all()) == (position, rows)
        app.ledger.append_events("r2", [ledgers["r2"].terminal("completed")])
        projector = app.recovery_status_projector(store)
        loaded = count_loads(app, monkeypatch)
        assert projector.catch_up() == 1
        assert loaded == ["r2"]
        assert store.position() == position + 1
        assert row(projector, "r2").terminal_event
        store.close()
    finally:
        app.close()


def test_a_stale_batch_is_refused(store: RecoveryStatusStore) -> None:
    store.commit([], {}, 5, expected_position=0)
    with pytest.raises(RecoveryStatusConflictError):
        store.commit([], {}, 9, expected_position=0)
    with pytest.raises(RecoveryStatusConflictError):
        store.commit([], {}, 3)  # never backwards
    assert store.position() == 5


class _Interleaving(RecoveryStatusStore):
    """A store that lets another projector commit first, once: the race of two processes."""

    def __init__(self, inner: RecoveryStatusStore, rival: RecoveryStatusProjector) -> None:
        super().__init__(inner.backend)
        self.inner = inner
        self.rival: RecoveryStatusProjector | None = rival
        self.conflicts = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def commit(self, *args: Any, **kwargs: Any) -> None:
        if self.rival is not None:
            rival, self.rival = self.rival, None
            rival.catch_up()
        try:
            self.inner.commit(*args, **kwargs)
        except RecoveryStatusConflictError:
            self.conflicts += 1
            raise


def test_two_projectors_on_one_file_do_not_overwrite_newer_rows(
    app: RuntimeApplication, store_url: str
) -> None:
    ledger = start_run(app, "r1")
    rival_store = open_status_store(store_url)
    rival = app.recovery_status_projector(rival_store)
    own_store = open_status_store(store_url)
    racing = _Interleaving(own_store, rival)
    projector = app.recovery_status_projector(racing)
    assert projector.catch_up() == 0  # the rival committed this page first
    assert racing.conflicts == 1
    app.ledger.append_events("r1", [ledger.terminal("completed")])
    assert projector.catch_up() == 1
    assert row(rival, "r1").terminal_event
    rival_store.close()
    own_store.close()


# --- factory -----------------------------------------------------------------------------------


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)  # SQLite file specifics
def test_store_factory_follows_the_application(
    app: RuntimeApplication, store_url: str, memory_app: RuntimeApplication
) -> None:
    store = recovery_status_store_for(app._es.recorder).backend
    assert isinstance(store, SqliteRecoveryStatusBackend)
    assert store.db_path == store_url
    store.close()
    memory_store = recovery_status_store_for(memory_app._es.recorder)
    assert isinstance(memory_store.backend, InMemoryRecoveryStatusBackend)
    read_only = RuntimeApplication.open(store_url, read_only=True)
    try:
        ro_store = recovery_status_store_for(read_only._es.recorder).backend
        assert isinstance(ro_store, SqliteRecoveryStatusBackend)
        assert ro_store.db_path == store_url
        ro_store.close()
    finally:
        read_only.close()


@pytest.mark.parametrize(
    ("db_name", "path"),
    [
        ("runtime.sqlite", "runtime.sqlite"),
        ("/data/runtime.sqlite", "/data/runtime.sqlite"),
        ("file:/data/runtime.sqlite?mode=ro", "/data/runtime.sqlite"),
        ("file:///data/run%20time.sqlite?mode=ro", "/data/run time.sqlite"),
        ("file:rel.sqlite", "rel.sqlite"),
        (":memory:", None),
        ("file:mem1?mode=memory&cache=shared", None),
    ],
)
def test_sqlite_path_from_dbname(db_name: str, path: str | None) -> None:
    assert sqlite_path_from_dbname(db_name) == path


def test_in_memory_application_gets_an_in_memory_read_model(
    memory_app: RuntimeApplication,
) -> None:
    memory_app.open_session("s1", "/workspace")
    start_run(memory_app, "r1")
    projector = memory_app.recovery_status_projector()
    assert isinstance(projector.store.backend, InMemoryRecoveryStatusBackend)
    assert [s.run_id for s in projector.needing_attention()] == ["r1"]


# --- incremental == rebuild ----------------------------------------------------------------------

RUNS = ("r0", "r1", "r2")
OPS = (
    "create",
    "model",
    "terminal_completed",
    "terminal_failed",
    "header_completed",
    "header_failed",
    "header_waiting",
    "tool_call",
    "tool_outcome",
    "claim",
    "claim_missing",
    "seal",
    "catch_up",
)


class _Scenario:
    """Applies random commands; refused commands write nothing and are simply skipped."""

    def __init__(self, app: RuntimeApplication, projector: RecoveryStatusProjector) -> None:
        self.app = app
        self.projector = projector
        self.ledgers = {
            run_id: LedgerBuilder(spine(run_id), prefix=f"{run_id}-e") for run_id in RUNS
        }
        self.pending: dict[str, tuple[str, str]] = {}
        self.counter = 0

    def apply(self, op: str, run_id: str) -> None:
        self.counter += 1
        n = self.counter
        app, ledger = self.app, self.ledgers[run_id]
        try:
            if op == "create":
                start_run_with(app, run_id, ledger)
            elif op == "model":
                app.ledger.append_events(run_id, [ledger.text(f"step {n}")])
            elif op == "terminal_completed":
                app.ledger.append_events(run_id, [ledger.terminal("completed")])
            elif op == "terminal_failed":
                app.ledger.append_events(run_id, [ledger.terminal("failed")])
            elif op == "header_completed":
                app.ledger.update_run_header(run_id, {"status": "completed"})
            elif op == "header_failed":
                app.ledger.update_run_header(
                    run_id, {"status": "failed", "failureClass": "provider_error"}
                )
            elif op == "header_waiting":
                app.ledger.update_run_header(run_id, {"status": "waiting_for_user", "updatedAt": n})
            elif op == "tool_call":
                call_id = f"c{n}"
                commit = app.tool_journal.commit_tool_prepared(
                    run_id, ledger.call(call_id, "Echo", {"n": n})
                )
                self.pending[run_id] = (commit.operation_id, call_id)
            elif op == "tool_outcome" and run_id in self.pending:
                operation_id, call_id = self.pending.pop(run_id)
                refs = {"operationId": operation_id, "toolCallId": call_id}
                app.tool_journal.commit_tool_outcome(
                    run_id, ledger.response(call_id, "Echo", refs=refs)
                )
            elif op == "claim":
                source = RUNS[(RUNS.index(run_id) + 1) % len(RUNS)]
                save_claim(app, source, run_id, high_water=n)
            elif op == "claim_missing":
                save_claim(app, run_id, f"x{n}", high_water=n)
            elif op == "seal":
                commit_unchecked(
                    app, app._store.load_run(run_id).decide_seal(f"claim-{n}", sealed_at=float(n))
                )
            elif op == "catch_up":
                self.projector.catch_up()
        except MakaError:
            pass


def start_run_with(app: RuntimeApplication, run_id: str, ledger: LedgerBuilder) -> None:
    app.ledger.create_run(run_header(spine(run_id)))
    app.ledger.append_events(run_id, [ledger.user(marker=True)])


@given(
    commands=st.lists(
        st.tuples(st.sampled_from(OPS), st.sampled_from(RUNS)), min_size=1, max_size=30
    ),
    page_size=st.sampled_from([1, 2, 7, 500]),
)
def test_incremental_maintenance_equals_rebuild(
    commands: list[tuple[str, str]], page_size: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runtime.sqlite"
        app = RuntimeApplication.open(str(path))
        store = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(path)))
        try:
            app.open_session("s1", "/workspace")
            projector = app.recovery_status_projector(store, page_size=page_size)
            scenario = _Scenario(app, projector)
            for op, run_id in commands:
                scenario.apply(op, run_id)
            projector.catch_up()
            incremental = store.all()
            assert projector.catch_up() == 0

            in_memory = app.recovery_status_projector(
                RecoveryStatusStore(InMemoryRecoveryStatusBackend())
            )
            in_memory.rebuild()
            assert in_memory.all(catch_up=False) == incremental

            other = RecoveryStatusStore(
                SqliteRecoveryStatusBackend(str(Path(tmp) / "other.sqlite"))
            )
            fresh = app.recovery_status_projector(other)
            fresh.rebuild()
            assert other.all() == incremental
            assert other.position() == store.position()
            other.close()

            reopened = RecoveryStatusStore(SqliteRecoveryStatusBackend(str(path)))
            app.recovery_status_projector(reopened).rebuild()
            assert reopened.all() == incremental
            reopened.close()

            # And the rows agree with the application itself.
            rows = {status.run_id: status for status in incremental}
            for run_id in app.ledger.all_run_ids():
                header = app.get_run_header(run_id)
                assert rows[run_id].header_status == header.status
                assert rows[run_id].high_water == app.ledger.run_high_water(run_id)
                assert rows[run_id].needs_attention or header.is_terminal
            missing = {r for r, s in rows.items() if s.header_status == "missing"}
            targets = {claim.target_run_id for claim in app.claims.all_claims()}
            assert missing == {t for t in targets if not app.run_exists(t)}
        finally:
            store.close()
            app.close()
