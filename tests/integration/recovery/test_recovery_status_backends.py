"""The recovery-status read model's backend is chosen from the event store's own recorder.

Pinned on a real SQLite file and a real PostgreSQL schema: each store gets its matching backend,
in the same file or schema as the facts (a second store chosen from the same recorder sees the
first one's position); eventsourcing's own recorders (not only maka_es's adapters) are
recognised; the choice follows the recorder even when the application's settings say
something else afterwards; a recorder of no known kind is the typed ``recovery_status_unsupported``
refusal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from eventsourcing.postgres import PostgresFactory
from eventsourcing.sqlite import SQLiteFactory

from maka_es.adapters.event_store import is_postgres_url, postgres_env_from_url
from maka_es.adapters.recovery_status import (
    PostgresRecoveryStatusBackend,
    SqliteRecoveryStatusBackend,
    recovery_status_store_for,
)
from maka_es.app import RuntimeApplication
from maka_es.errors import MakaError, RecoveryStatusUnsupportedError
from maka_es.recovery.model.status_store import InMemoryRecoveryStatusBackend
from maka_es.testing.builders import Spine, run_header


def test_each_store_gets_its_matching_backend_where_its_facts_are(
    store_app: RuntimeApplication, store_url: str
) -> None:
    store_app.open_session("s1", "/workspace")
    store_app.ledger.create_run(
        run_header(Spine(session_id="s1", invocation_id="i1", run_id="r1", turn_id="t1"))
    )
    store_app.recovery_status.catch_up()
    backend = store_app.recovery_status.store.backend
    if is_postgres_url(store_url):
        assert type(backend) is PostgresRecoveryStatusBackend
    else:
        assert type(backend) is SqliteRecoveryStatusBackend
        assert backend.db_path == store_url
    again = recovery_status_store_for(store_app._es.recorder)
    try:
        assert type(again.backend) is type(backend)
        written = store_app._es.recorder.max_notification_id()
        assert written
        assert again.position() == written
        assert [row.run_id for row in again.all()] == ["r1"]
    finally:
        again.close()


def test_the_in_memory_store_gets_the_in_memory_backend(memory_app: RuntimeApplication) -> None:
    store = recovery_status_store_for(memory_app._es.recorder)
    assert type(store.backend) is InMemoryRecoveryStatusBackend


def test_the_choice_follows_the_recorder_not_the_settings(db_path: Path) -> None:
    with RuntimeApplication.open_sqlite(str(db_path)) as app:
        app.env["PERSISTENCE_MODULE"] = "no.such.persistence"
        app.env["SQLITE_DBNAME"] = str(db_path.with_name("elsewhere.sqlite"))
        backend = app.recovery_status.store.backend
        assert isinstance(backend, SqliteRecoveryStatusBackend)
        assert backend.db_path == str(db_path)
    assert not db_path.with_name("elsewhere.sqlite").exists()


def test_eventsourcings_own_sqlite_recorders_are_recognised(db_path: Path) -> None:
    on_file = SQLiteFactory({"SQLITE_DBNAME": str(db_path), "SQLITE_LOCK_TIMEOUT": "3"})
    store = recovery_status_store_for(on_file.application_recorder())
    try:
        assert isinstance(store.backend, SqliteRecoveryStatusBackend)
        assert store.backend.db_path == str(db_path)
        (busy_ms,) = store.backend._conn.execute("PRAGMA busy_timeout").fetchone()
        assert busy_ms == 3000  # waits for a lock as long as the event store does
    finally:
        store.close()
        on_file.close()
    in_memory = SQLiteFactory({"SQLITE_DBNAME": ":memory:"})
    store = recovery_status_store_for(in_memory.application_recorder())
    assert isinstance(store.backend, InMemoryRecoveryStatusBackend)
    in_memory.close()


def test_eventsourcings_own_postgres_recorder_is_recognised(pg_store_url: str) -> None:
    env = postgres_env_from_url(pg_store_url)
    factory = PostgresFactory(env)
    try:
        store = recovery_status_store_for(factory.application_recorder())
        try:
            assert isinstance(store.backend, PostgresRecoveryStatusBackend)
            store.commit([], {}, 7, expected_position=0)
        finally:
            store.close()
    finally:
        factory.close()
    with RuntimeApplication.open(pg_store_url) as app:  # the same schema: position 7 is there
        assert app.recovery_status.store.position() == 7


class _KeyValueRecorder:
    """A recorder of a kind the read model has no backend for."""


@pytest.mark.parametrize("recorder", [_KeyValueRecorder(), object()])
def test_an_unknown_recorder_is_a_typed_refusal(recorder: object) -> None:
    with pytest.raises(RecoveryStatusUnsupportedError) as info:
        recovery_status_store_for(recorder)
    assert isinstance(info.value, MakaError)
    assert info.value.code == "recovery_status_unsupported"
    kind = type(recorder)
    assert info.value.detail == {"recorder": f"{kind.__module__}.{kind.__qualname__}"}
