"""Store faults during continuation planning park, they never raise (issue 9 item 5).

Real store faults on both stores (a SQLite file and a PostgreSQL schema): a table dropped
under the planner's feet at the moment a given read happens, and on SQLite another connection
holding an exclusive lock on the file. A fault that is not a
claim read parks ``source_run_unreadable`` (step 1); a claim read parks
``continuation_authority_unavailable`` (step 5). Neither is ever turned into a verdict about
the data (``runtime_lineage_missing``, ``continuation_claim_repair_required``)."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from eventsourcing.persistence import PersistenceError

from maka_es.app import RuntimeApplication
from maka_es.continuation.claims import RunReader
from maka_es.continuation.host import HostObservation, StaticHostInspector
from maka_es.continuation.model.plan import ContinuationPlan
from maka_es.continuation.service import ContinuationPlanner
from maka_es.errors import RunNotFoundError, StoreUnavailableError
from maka_es.ledger.ports import is_store_fault, store_fault_class
from maka_es.testing.builders import LedgerBuilder, Spine, run_header
from tests.support.store_sql import drop_events_table

WORKSPACE = "workspace:v1:6f1c2a4e-8b7d-4c3e-9a1f-0e2d3c4b5a69"
INSPECTOR = StaticHostInspector(
    HostObservation(
        workspace_identity=WORKSPACE,
        workspace_path="/workspace",
        background_operations_settled=True,
        available_tool_names=("Bash", "Read"),
    )
)
T = TypeVar("T")


def open_app(store: str | Path, **env: str) -> RuntimeApplication:
    counter = itertools.count(1)
    return RuntimeApplication.open(
        str(store),
        env={"MAKA_RUNTIME_SAFE_BOUNDARY_RESUME": "1", "SQLITE_LOCK_TIMEOUT": "1", **env},
        id_factory=lambda: f"new-{next(counter)}",
        host_inspector=INSPECTOR,
    )


def failed_run(app: RuntimeApplication, spine: Spine, header: dict[str, Any] | None = None) -> int:
    ledger = LedgerBuilder(spine, prefix=f"{spine.run_id}-")
    app.ledger.create_run(run_header(spine, workspaceIdentity=WORKSPACE, **(header or {})))
    if header and "continuationSource" in header:
        ledger.state_delta_continuation_start(ts=5000)
    else:
        ledger.user("fix the port")
    ledger.terminal("failed")
    app.ledger.append_events(spine.run_id, ledger.events)
    app.ledger.update_run_header(
        spine.run_id, {"status": "failed", "failureClass": "provider_error"}
    )
    return len(ledger.events)


def populated_store(store: str) -> str:
    """A store with a failed root run r1 and its failed continuation r2 (V1 edge)."""
    with open_app(store) as app:
        app.open_session("s1", "/workspace")
        high_water = failed_run(app, Spine())
        source = {
            "sourceInvocationId": "i1",
            "sourceRunId": "r1",
            "sourceTurnId": "t1",
            "sourceRuntimeEventHighWater": high_water,
        }
        failed_run(
            app,
            Spine("s1", "i2", "r2", "t2"),
            {"parentRunId": "r1", "parentTurnId": "t1", "continuationSource": source},
        )
        plan = app.plan_continuation("s1")
        assert plan.disposition == "continue", plan.diagnostics
    return store


@pytest.fixture
def populated(store_url: str) -> str:
    return populated_store(store_url)


def then_drop(store: str, read: Callable[[str], T], when: str) -> Callable[[str], T]:
    """``read``, but the table disappears just before it reads ``when``."""

    def reading(key: str) -> T:
        if key == when:
            drop_events_table(store)
        return read(key)

    return reading


class ExclusiveLock:
    """Another connection holding an exclusive lock on the file until released."""

    def __init__(self, db: Path) -> None:
        self.connection: sqlite3.Connection | None = sqlite3.connect(str(db), isolation_level=None)
        self.connection.execute("PRAGMA locking_mode=EXCLUSIVE")
        self.connection.execute("BEGIN EXCLUSIVE")

    def release(self) -> None:
        if self.connection is not None:
            self.connection.execute("ROLLBACK")
            self.connection.close()
            self.connection = None


def assert_parked(plan: ContinuationPlan, reason: str, error_class: str) -> None:
    assert plan.disposition == "park"
    assert plan.rejection_reasons == (reason,)
    detail = plan.diagnostics[0].detail
    assert detail is not None
    assert detail["errorClass"] == error_class


# SQLite only: the lock is SQLite's own file lock (PostgreSQL's lock faults: test_postgres_store).
def test_a_locked_database_is_a_typed_fault_and_planning_recovers_after(db_path: Path) -> None:
    """Another process holds an exclusive lock: in WAL mode that lock can only be taken while
    no application has the file open, so the planner meets it when its application opens. The
    open refuses with the typed ``store_unavailable`` (never a raw sqlite3 error); once the lock
    is released the same store plans ``continue``."""
    populated = populated_store(str(db_path))
    lock = ExclusiveLock(db_path)
    try:
        with pytest.raises(StoreUnavailableError) as refused:
            open_app(populated)
        assert refused.value.code == "store_unavailable"
        assert refused.value.detail["reason"] == "locked"
    finally:
        lock.release()
    with open_app(populated) as app:
        plan = app.plan_continuation("s1")
    assert plan.disposition == "continue", plan.diagnostics


def test_a_dropped_table_parks(populated: str) -> None:
    with open_app(populated) as app:
        drop_events_table(populated)
        assert_parked(app.plan_continuation("s1"), "source_run_unreadable", "store_schema_missing")


def _planner(app: RuntimeApplication, reader: RunReader) -> ContinuationPlanner:
    return ContinuationPlanner(reader, INSPECTOR, app.id_factory, feature_enabled=True)


def test_a_fault_while_reading_an_ancestor_is_not_a_missing_lineage(populated: str) -> None:
    with open_app(populated) as app:
        reader = RunReader(
            then_drop(populated, app.get_run_header, when="r1"),
            app.read_run_events,
            app.list_runs,
            app.claims.get_claim,
        )
        plan = _planner(app, reader).plan("s1", "/workspace", "r2")
    assert_parked(plan, "source_run_unreadable", "store_schema_missing")


def test_a_fault_while_reading_the_claim_is_authority_unavailable(populated: str) -> None:
    with open_app(populated) as app:
        reader = RunReader(
            app.get_run_header, app.read_run_events, app.list_runs, app.claims.get_claim
        )
        claim_id = _planner(app, reader).plan("s1", "/workspace", "r2").continuation
        assert claim_id is not None
        reader.claim = then_drop(populated, app.claims.get_claim, when=claim_id.claim_id or "")
        plan = _planner(app, reader).plan("s1", "/workspace", "r2")
    assert_parked(plan, "continuation_authority_unavailable", "store_schema_missing")


def test_a_typed_store_error_parks_the_same_way(populated: str) -> None:
    """The store layer may raise the library's typed ``StoreUnavailableError``: a fault, not
    "the run does not exist" and not "the ancestor is missing"."""

    def unavailable(run_id: str) -> Any:
        raise StoreUnavailableError(f"cannot read {run_id}: database is locked")

    with open_app(populated) as app:

        def ancestor_unavailable(run_id: str) -> Any:
            return unavailable(run_id) if run_id == "r1" else app.get_run_header(run_id)

        lineage = RunReader(
            ancestor_unavailable, app.read_run_events, app.list_runs, app.claims.get_claim
        )
        claims = RunReader(app.get_run_header, app.read_run_events, app.list_runs, unavailable)
        sources = RunReader(unavailable, app.read_run_events, app.list_runs, app.claims.get_claim)
        assert_parked(
            _planner(app, lineage).plan("s1", "/workspace", "r2"),
            "source_run_unreadable",
            "store_unavailable",
        )
        assert_parked(
            _planner(app, claims).plan("s1", "/workspace", "r2"),
            "continuation_authority_unavailable",
            "store_unavailable",
        )
        assert_parked(
            _planner(app, sources).plan("s1", "/workspace", "r2"),
            "source_run_unreadable",
            "store_unavailable",
        )


def test_the_fault_classification() -> None:
    faults = [
        StoreUnavailableError("locked"),
        PersistenceError("locked"),
        sqlite3.OperationalError("database is locked"),
        OSError("disk I/O error"),
    ]
    assert all(is_store_fault(fault) for fault in faults)
    assert [store_fault_class(f) for f in faults] == [
        "store_unavailable",
        "PersistenceError",
        "OperationalError",
        "OSError",
    ]
    assert not is_store_fault(RunNotFoundError("r9 not found"))
    assert not is_store_fault(ValueError("bad input"))
