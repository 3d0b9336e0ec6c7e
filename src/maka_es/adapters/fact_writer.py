"""A command's facts into the store: one transaction, one multi-row insert (ADR 0033).

Why not eventsourcing's ``Application.save``: every command of the library saves facts it just
decided and validated, and nothing else (no aggregates to collect, no snapshots, no
``_notify`` subscribers, no notification ids anyone reads back). The generic path paid for all
of that on each of the two commits of a tool step (a processing event, the event store's
recordings, a deferred ``BEGIN`` and one ``INSERT`` call per row to collect ``lastrowid``):
about a third of a step's CPU. This writer keeps exactly what the store promises and drops
the rest:

* the rows are the mapper's rows: same columns, same bytes (the ``FactMapper`` encodes them,
  so the own-facts read-back of ADR 0026 still recognises them); the notification ids are
  SQLite's rowids, assigned by the insert as before;
* one ``BEGIN IMMEDIATE`` (the write lock is taken before the first row, so a concurrent
  writer waits or is refused at ``BEGIN``), one ``executemany``, then, before ``COMMIT`` and
  in this order: the crash failpoint, the store-file identity check (ADR 0014) and the
  ``data_version`` note of the own-commit watch (ADR 0026); ``synchronous=FULL`` and WAL are
  the connection's, set by the pool;
* a uniqueness violation is eventsourcing's ``IntegrityError`` (a lost race the caller
  classifies); every other fault is typed by the same ``typed_store_faults`` as every access.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import suppress
from typing import ClassVar
from uuid import UUID

from eventsourcing.persistence import AggregateRecorder, IntegrityError, Mapper, StoredEvent
from eventsourcing.sqlite import SQLiteConnection, SQLiteCursor

from maka_es import failpoints
from maka_es.adapters.sqlite import DurableSQLiteDatastore, FailpointSQLiteApplicationRecorder
from maka_es.adapters.sqlite_faults import typed_store_faults
from maka_es.ledger.facts import StoredFact

Row = tuple[str, int, str, bytes]


class RecorderFactWriter:
    """The other stores (PostgreSQL, eventsourcing's in-memory store): the mapper's rows
    handed straight to the recorder's ``insert_events``, which is all ``Application.save``
    did for facts (no aggregates, snapshots or subscribers). The recorder keeps its own
    transaction, locks, failpoint and fault typing (ADR 0028)."""

    def __init__(self, recorder: AggregateRecorder, mapper: Mapper[UUID]) -> None:
        self._recorder = recorder
        self._mapper = mapper

    def write(self, facts: Sequence[StoredFact]) -> None:
        """Commit ``facts`` in the recorder's one transaction, or raise with nothing written."""
        self._recorder.insert_events([self._mapper.to_stored_event(fact) for fact in facts])


class SqliteFactWriter:
    """Writes one command's facts to the recorder's SQLite file in one transaction."""

    #: The cursor class the writer uses; a test probe substitutes a counting subclass.
    cursor_factory: ClassVar[type[sqlite3.Cursor]] = sqlite3.Cursor

    def __init__(self, recorder: FailpointSQLiteApplicationRecorder, mapper: Mapper[UUID]) -> None:
        datastore = recorder.datastore
        if not isinstance(datastore, DurableSQLiteDatastore):
            raise TypeError("the fact writer needs the library's durable SQLite datastore")
        self._recorder = recorder
        self._datastore = datastore
        self._mapper = mapper
        self._insert = recorder.insert_events_statement

    def write(self, facts: Sequence[StoredFact]) -> None:
        """Commit ``facts`` durably, or raise with nothing of them written."""
        stored = [self._mapper.to_stored_event(fact) for fact in facts]
        rows: list[Row] = [
            (
                s.originator_id.hex if isinstance(s.originator_id, UUID) else s.originator_id,
                s.originator_version,
                s.topic,
                s.state,
            )
            for s in stored
        ]
        pool = self._datastore.pool
        own_commits = self._recorder.own_commits
        try:
            with (
                typed_store_faults(pool.db_path, read_only=pool.read_only),
                self._datastore.get_connection(commit=True) as conn,
            ):
                self._transact(conn, rows, stored)
        except BaseException:
            own_commits.failed()
            raise
        own_commits.committed()

    def _transact(
        self, conn: SQLiteConnection, rows: list[Row], stored: Sequence[StoredEvent]
    ) -> None:
        """BEGIN IMMEDIATE, the rows, the checks before COMMIT, COMMIT; rolled back on any
        exception (the failpoint's included), so a refusal leaves nothing written."""
        raw: sqlite3.Connection = conn._sqlite_conn
        cursor = raw.cursor(self.cursor_factory)
        try:
            cursor.execute("BEGIN IMMEDIATE")
            cursor.executemany(self._insert, rows)
            failpoints.hit(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
            self._datastore.pool.verify_file_identity()
            self._recorder.own_commits.note_write(SQLiteCursor(cursor), stored)
            cursor.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            _roll_back(conn)
            raise IntegrityError(exc) from exc
        except BaseException:
            _roll_back(conn)
            raise
        finally:
            cursor.close()


def _roll_back(conn: SQLiteConnection) -> None:
    """Undo an open transaction; a connection that cannot roll back is closed, never reused
    (the pool forgets closed connections), so the next command never inherits its state."""
    raw: sqlite3.Connection = conn._sqlite_conn
    if not raw.in_transaction:
        return
    try:
        raw.rollback()
    except sqlite3.Error:
        with suppress(sqlite3.Error):
            conn.close()
