"""PostgreSQL: every statement a command runs waits for a lock at most ``lock_timeout`` (ADR 0028,
amendment of issue 20), not only the insert transaction eventsourcing bounds itself.

Another session holds ``ACCESS EXCLUSIVE`` on one table (the events, the run snapshots, the
recovery-status read model) in an open transaction; with only ``lock_timeout`` configured, each
kind of command returns within a hard bound: a typed ``store_unavailable`` (``locked``) with
nothing written, or, for the best-effort snapshot table, the answer replayed from the ledger.
Each command runs in a thread joined with a timeout and the lock is released afterwards, so a
regression fails the test instead of hanging the suite. Real server, real connections.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import NamedTuple

import psycopg
import pytest

from maka_es.app import RuntimeApplication
from maka_es.errors import StoreUnavailableError
from maka_es.testing.builders import LedgerBuilder, run_header
from maka_es.testing.probes import store_snapshot

#: Seconds a command may take behind the lock: the 1 s lock_timeout plus generous slack.
BOUND_S = 10.0
EVERY = 3  # facts between run snapshots here, so that the snapshot table exists


@pytest.fixture(autouse=True)
def _small_snapshot_interval(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("maka_es.adapters.run_snapshots.SNAPSHOT_EVERY", EVERY)


class LockStore(NamedTuple):
    url: str
    high_water: int


@pytest.fixture
def lock_store(pg_store_url: str) -> LockStore:
    """The test's store with only ``lock_timeout`` (seconds, eventsourcing's unit) configured,
    holding one session and one run of a few events (and so a run snapshot)."""
    url = f"{pg_store_url}&lock_timeout=1"
    with RuntimeApplication.open(url) as app:
        app.open_session("s1", "/workspace")
        app.ledger.create_run(run_header())
        ledger = LedgerBuilder()
        ledger.user()
        for index in range(EVERY + 1):
            ledger.text(f"step {index}", event_id=f"m{index}")
        app.ledger.append_events("r1", ledger.events)
        app.recover()
    with RuntimeApplication.open(url) as app:
        stored = app.read_run_events("r1")  # a cold load: folds past EVERY, writes the snapshot
    return LockStore(url, len(stored))


@contextmanager
def _locked(app: RuntimeApplication, server_url: str, table: str) -> Iterator[None]:
    """Another session holds ACCESS EXCLUSIVE on ``table`` of the app's schema until the block
    ends (and at most 60 s, so that a hung command is released after the test failed)."""
    schema = app.env["POSTGRES_SCHEMA"]
    locked, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with psycopg.connect(server_url) as admin:
            admin.execute(f'LOCK TABLE "{schema}".{table} IN ACCESS EXCLUSIVE MODE')
            locked.set()
            release.wait(60)

    holder = threading.Thread(target=hold_lock, daemon=True)
    holder.start()
    try:
        assert locked.wait(30)
        yield
    finally:
        release.set()
        holder.join(70)


def _bounded(command: Callable[[], object]) -> tuple[object, float]:
    """What ``command`` returned or raised, and how long it took; fails if it is still
    waiting after ``BOUND_S`` (the lock is then released by the caller's ``_locked``)."""
    outcome: list[object] = []
    started = time.monotonic()

    def run() -> None:
        try:
            outcome.append(command())
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(BOUND_S)
    elapsed = time.monotonic() - started
    assert not worker.is_alive(), f"the command still waits for the lock after {elapsed:.1f} s"
    return outcome[0], elapsed


def _assert_locked(outcome: object) -> None:
    assert isinstance(outcome, StoreUnavailableError), outcome
    assert outcome.code == "store_unavailable"
    assert outcome.detail["reason"] == "locked"
    assert outcome.detail["sqlstate"] == "55P03"


def _append(app: RuntimeApplication) -> object:
    ledger = LedgerBuilder(events=[e.to_wire() for e in app.read_run_events("r1")])
    ledger.text("one more", event_id="more")
    with _locked(app, _server_of(app), "maka_es_events"):
        outcome, _ = _bounded(lambda: app.ledger.append_events("r1", ledger.events[-1:]))
    return outcome


def _server_of(app: RuntimeApplication) -> str:
    env = app.env
    return (
        f"postgresql://{env['POSTGRES_USER']}:{env['POSTGRES_PASSWORD']}@"
        f"{env['POSTGRES_HOST']}:{env['POSTGRES_PORT']}/{env['POSTGRES_DBNAME']}"
    )


#: Commands whose first statement reads the locked events table of a cold application.
EVENT_READS: dict[str, Callable[[RuntimeApplication], object]] = {
    "read_run_events": lambda app: app.read_run_events("r1"),
    "get_run_header": lambda app: app.get_run_header("r1"),
    "get_session": lambda app: app.get_session("s1"),
    "get_claim": lambda app: app.claims.get_claim("no-such-claim"),
    "all_run_ids": lambda app: app.ledger.all_run_ids(),
    "recover": lambda app: app.recover(),
}


@pytest.mark.parametrize("command", sorted(EVENT_READS))
def test_a_read_behind_a_locked_events_table_is_typed_within_the_lock_timeout(
    lock_store: LockStore, pg_server_url: str, command: str
) -> None:
    with RuntimeApplication.open(lock_store.url) as app:
        before = store_snapshot(app)
        with _locked(app, pg_server_url, "maka_es_events"):
            outcome, elapsed = _bounded(lambda: EVENT_READS[command](app))
        _assert_locked(outcome)
        assert elapsed < BOUND_S
        assert store_snapshot(app) == before  # nothing written
        assert (
            app.ledger.run_high_water("r1") == lock_store.high_water
        )  # and the store serves again


def test_an_append_behind_a_locked_events_table_is_typed_and_writes_nothing(
    lock_store: LockStore,
) -> None:
    with RuntimeApplication.open(lock_store.url) as app:
        before = store_snapshot(app)
        _assert_locked(_append(app))
        assert store_snapshot(app) == before


def test_planning_behind_a_locked_events_table_is_typed_within_the_lock_timeout(
    lock_store: LockStore, pg_server_url: str
) -> None:
    with RuntimeApplication.open(lock_store.url, safe_boundary_resume=True) as app:
        with _locked(app, pg_server_url, "maka_es_events"):
            outcome, _ = _bounded(lambda: app.plan_resume("r1"))
        _assert_locked(outcome)
        assert app.plan_resume("r1").source_runtime_event_high_water == lock_store.high_water


@pytest.mark.parametrize(
    "table", ["maka_es_recovery_status", "maka_es_recovery_tracking", "maka_es_recovery_claims"]
)
def test_the_recovery_status_read_model_behind_a_lock_is_typed(
    lock_store: LockStore, pg_server_url: str, table: str
) -> None:
    with RuntimeApplication.open(lock_store.url) as app:
        read = {
            "maka_es_recovery_status": lambda: app.recovery_status.status("r1", catch_up=False),
            "maka_es_recovery_tracking": lambda: app.recovery_status.catch_up(),
            "maka_es_recovery_claims": lambda: app.recovery_status.rebuild(),
        }[table]
        with _locked(app, pg_server_url, table):
            outcome, _ = _bounded(read)
        _assert_locked(outcome)
        status = app.recovery_status.status("r1")
        assert status is not None
        assert status.run_id == "r1"


@pytest.mark.parametrize("table", ["maka_es_run_snapshots", "maka_es_run_snapshots_parts"])
def test_a_locked_snapshot_table_means_no_snapshot_not_a_wait(
    lock_store: LockStore, pg_server_url: str, table: str
) -> None:
    """The snapshot is best-effort (ADR 0032): behind a lock the run is folded from its
    ledger, and the answer is the full replay's."""
    with RuntimeApplication.open(lock_store.url) as reference:
        expected = [e.to_wire() for e in reference.read_run_events("r1")]
    with RuntimeApplication.open(lock_store.url) as app:
        with _locked(app, pg_server_url, table):
            outcome, _ = _bounded(lambda: [e.to_wire() for e in app.read_run_events("r1")])
        assert outcome == expected
