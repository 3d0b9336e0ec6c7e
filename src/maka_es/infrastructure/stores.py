"""SQLite (and, later, PostgreSQL) persistence for eventsourcing, with maka_es durability.

Why a factory of our own: eventsourcing's SQLite module switches file databases to WAL but
leaves ``synchronous`` at the build default. maka_es promises that a commit that returned
survives a process crash, so every connection is opened with ``synchronous=FULL`` (asserted by a
test) and the recorder exposes a failpoint inside the write transaction for crash tests.

Select it with ``PERSISTENCE_MODULE=maka_es.infrastructure.stores`` and ``SQLITE_DBNAME=<file>``
(the RuntimeApplication default).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from eventsourcing import sqlite as es_sqlite
from eventsourcing.persistence import StoredEvent
from eventsourcing.sqlite import (
    SQLiteApplicationRecorder,
    SQLiteConnection,
    SQLiteConnectionPool,
    SQLiteCursor,
    SQLiteDatastore,
)

from maka_es.infrastructure import failpoints

SYNCHRONOUS_FULL = 2


class DurableSQLiteConnectionPool(SQLiteConnectionPool):
    """Every connection: WAL (file databases) and ``synchronous=FULL``."""

    def _create_connection(self) -> SQLiteConnection:
        connection = super()._create_connection()
        raw: sqlite3.Connection = connection._sqlite_conn
        raw.execute("PRAGMA synchronous=FULL;")
        raw.execute("PRAGMA foreign_keys=ON;")
        return connection


class DurableSQLiteDatastore(SQLiteDatastore):
    def __init__(self, db_name: str, **kwargs: Any) -> None:
        super().__init__(db_name, **kwargs)
        pool = self.pool
        self.pool = DurableSQLiteConnectionPool(
            db_name=db_name,
            lock_timeout=pool.lock_timeout,
        )
        pool.close()


class FailpointSQLiteApplicationRecorder(SQLiteApplicationRecorder):
    """The library's recorder plus a failpoint after the inserts, inside the transaction."""

    def _insert_events(
        self, c: SQLiteCursor, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        ids = super()._insert_events(c, stored_events, **kwargs)
        failpoints.hit(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
        return ids


class Factory(es_sqlite.SQLiteFactory):
    """eventsourcing infrastructure factory selected by ``PERSISTENCE_MODULE``."""

    application_recorder_class = FailpointSQLiteApplicationRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        old = self.datastore
        self.datastore = DurableSQLiteDatastore(
            old.pool.db_name,
            lock_timeout=old.pool.lock_timeout,
            single_row_tracking=old.single_row_tracking,
            originator_id_type=old.originator_id_type,
        )
        old.close()
