"""Fail loudly if the eventsourcing internals the adapters build on change shape.

Why: ``maka_es.adapters.sqlite`` overrides private hooks of eventsourcing's SQLite module (the
pool's connection factory, the recorder's insert step inside the write transaction, the raw
connection behind the wrapper), ``maka_es.adapters.postgres`` those of its PostgreSQL module
(the connection setup and checkout, the recorder's insert steps, the pool's keywords), and
``maka_es.adapters.event_store`` evicts from the repository's aggregate cache. A minor
eventsourcing release may rename any of them; durability (``synchronous=FULL``,
``synchronous_commit``), the crash failpoint inside the transaction and the store-file
identity check would then silently stop applying. This test names every such hook, so an
upgrade fails here, with the hook's name, instead of in a crash test or not at all.
"""

from __future__ import annotations

import inspect
import sqlite3
from pathlib import Path

import pytest
from eventsourcing import postgres as es_postgres
from eventsourcing import sqlite as es_sqlite
from eventsourcing.persistence import ConnectionPool

from maka_es.adapters import postgres as pg_adapter
from maka_es.adapters import sqlite as adapter
from maka_es.app import RuntimeApplication

#: (owner, attribute, what maka_es uses it for)
PRIVATE_HOOKS = [
    (
        es_sqlite.SQLiteConnectionPool,
        "_create_connection",
        "PRAGMA synchronous=FULL per connection",
    ),
    (
        es_sqlite.SQLiteApplicationRecorder,
        "_insert_events",
        "failpoint + file identity before COMMIT",
    ),
    (es_sqlite.SQLiteDatastore, "transaction", "typed store faults around every transaction"),
    (ConnectionPool, "close", "the factory replaces eventsourcing's pool with the durable one"),
    (ConnectionPool, "_get_connection", "checkouts refused once the pool is shutting down"),
    (ConnectionPool, "put_connection", "a connection in use at close() closes on its return"),
    (
        es_postgres.PostgresDatastore,
        "after_connect_func",
        "synchronous_commit = on and the statement timeout per connection",
    ),
    (es_postgres.PostgresDatastore, "get_connection", "typed faults at every checkout"),
    (es_postgres.PostgresDatastore, "register_type_adapters", "after the schema statements"),
    (
        es_postgres.PostgresApplicationRecorder,
        "_insert_events",
        "the table lock, inside our own write transaction",
    ),
    (
        es_postgres.PostgresApplicationRecorder,
        "_insert_stored_events",
        "the rows, before the failpoint and the watched COMMIT",
    ),
    (
        es_postgres.PostgresApplicationRecorder,
        "_fetch_ids_after_insert_events",
        "notification ids of our own write transaction",
    ),
]

#: Pool state the durable pool's ``close()`` reads (see ``DurableSQLiteConnectionPool.close``).
POOL_STATE = ["_put_condition", "_in_use", "_pool", "_closed"]


@pytest.mark.parametrize(("owner", "name", "why"), PRIVATE_HOOKS)
def test_the_overridden_hook_still_exists(owner: type, name: str, why: str) -> None:
    assert callable(getattr(owner, name, None)), f"{owner.__qualname__}.{name} is gone ({why})"


def test_the_hooks_keep_the_signatures_the_overrides_call() -> None:
    insert = inspect.signature(es_sqlite.SQLiteApplicationRecorder._insert_events)
    assert list(insert.parameters)[:3] == ["self", "c", "stored_events"]
    pool = inspect.signature(es_sqlite.SQLiteConnectionPool.__init__)
    assert {"db_name", "lock_timeout"} <= set(pool.parameters)
    datastore = inspect.signature(es_sqlite.SQLiteDatastore.__init__)
    assert {"lock_timeout", "single_row_tracking", "originator_id_type"} <= set(
        datastore.parameters
    )


# SQLite only: the state of eventsourcing's SQLite pool (PostgreSQL's pool is psycopg_pool's).
def test_the_pool_state_the_durable_close_reads_still_exists(tmp_path: Path) -> None:
    pool = es_sqlite.SQLiteConnectionPool(db_name=str(tmp_path / "state.sqlite"))
    try:
        for name in POOL_STATE:
            assert hasattr(pool, name), f"SQLiteConnectionPool.{name} is gone"
        assert pool._put_condition.acquire(blocking=False)
        try:  # re-entrant: close() and put_connection() call the base under this lock
            assert pool._put_condition.acquire(blocking=False)
            pool._put_condition.release()
        finally:
            pool._put_condition.release()
    finally:
        pool.close()


# SQLite only: the SQLite adapter's classes (PostgreSQL's: the test below).
def test_the_project_overrides_are_the_ones_in_use(tmp_path: Path) -> None:
    """Through a real application: the durable pool, the failpoint recorder, FULL sync, and a
    raw connection reachable where ``_create_connection`` expects it."""
    with RuntimeApplication.open_sqlite(str(tmp_path / "hooks.sqlite")) as app:
        factory = app._es.factory
        assert isinstance(factory, adapter.Factory)
        datastore = factory.datastore
        assert isinstance(datastore, adapter.DurableSQLiteDatastore)
        assert isinstance(datastore.pool, adapter.DurableSQLiteConnectionPool)
        assert isinstance(app._es.recorder, adapter.FailpointSQLiteApplicationRecorder)
        with datastore.transaction(commit=False) as cursor:
            cursor.execute("PRAGMA synchronous")
            assert cursor.fetchone()[0] == adapter.SYNCHRONOUS_FULL
        connection = datastore.pool.get_connection()
        try:
            assert isinstance(connection._sqlite_conn, sqlite3.Connection)
        finally:
            datastore.pool.put_connection(connection)
        cache = app._es._repository.cache
        assert cache is not None
        assert "evict" in inspect.signature(cache.get).parameters


def test_the_postgres_overrides_are_the_ones_in_use(pg_store_url: str) -> None:
    """Through a real application on the test server: the durable datastore, the failpoint
    recorder, ``synchronous_commit`` on, and the schema statements and pool keywords the
    factory and ``create_table`` read."""
    with RuntimeApplication.open(pg_store_url) as app:
        factory = app._es.factory
        assert isinstance(factory, pg_adapter.Factory)
        datastore = factory.datastore
        assert isinstance(datastore, pg_adapter.DurablePostgresDatastore)
        assert isinstance(app._es.recorder, pg_adapter.FailpointPostgresApplicationRecorder)
        assert app._es.recorder.sql_create_statements
        pool_kwargs = datastore.pool.kwargs
        assert isinstance(pool_kwargs, dict)
        assert {"dbname", "host", "port", "user"} <= set(pool_kwargs)
        with datastore.get_connection() as conn:
            [row] = conn.execute("SHOW synchronous_commit").fetchall()
        assert list(row.values()) == ["on"]
