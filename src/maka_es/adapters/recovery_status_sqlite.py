"""The recovery-status read model in SQLite: one row per run, plus the tracking position.

Why rows and the tracking position are committed together: a projector that crashed after
writing rows but before recording how far it got would reprocess (harmless), but one that
recorded the position without the rows would silently skip facts forever. Both go into ONE
transaction, so a reader never sees one without the other (eventsourcing's ``ProjectionRunner``
does not support SQLite, hence this small store of our own; see
docs/adr/0012-startup-recovery-and-read-model.md).

The read model is *derived*: it can always be thrown away and rebuilt from the event store
(``RecoveryStatusProjector.rebuild``). A schema change therefore simply drops and recreates the
tables instead of migrating them.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from typing import Any
from uuid import UUID

from maka_es import failpoints
from maka_es.adapters.recovery_status_rows import (
    SCHEMA_VERSION,
    STATUS_COLUMNS,
    check_fetched_position,
    row_from_values,
    row_values,
    stream_link_values,
)
from maka_es.adapters.sqlite import typed_store_faults
from maka_es.recovery.status_store import INSIDE_COMMIT_FAILPOINT, RunRecoveryStatus

__all__ = ["SCHEMA_VERSION", "SqliteRecoveryStatusStore"]

_TABLES = (
    "maka_es_recovery_status",
    "maka_es_recovery_streams",
    "maka_es_recovery_claims",
    "maka_es_recovery_tracking",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS maka_es_recovery_status (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    header_status TEXT NOT NULL,
    terminal_event INTEGER NOT NULL,
    header_matches_terminal INTEGER NOT NULL,
    resume_disposition TEXT,
    resume_reasons TEXT NOT NULL,
    unsettled_operations INTEGER NOT NULL,
    claim_state TEXT NOT NULL,
    claim_id TEXT,
    sealed_by TEXT,
    high_water INTEGER NOT NULL,
    needs_attention INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS maka_es_recovery_status_attention
    ON maka_es_recovery_status (needs_attention) WHERE needs_attention = 1;
CREATE TABLE IF NOT EXISTS maka_es_recovery_streams (
    stream_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS maka_es_recovery_claims (
    claim_id TEXT PRIMARY KEY,
    target_run_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS maka_es_recovery_claims_target
    ON maka_es_recovery_claims (target_run_id);
CREATE TABLE IF NOT EXISTS maka_es_recovery_tracking (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    schema_version INTEGER NOT NULL,
    position INTEGER NOT NULL
);
"""

_UPSERT_ROW = (
    f"INSERT INTO maka_es_recovery_status ({', '.join(STATUS_COLUMNS)}) "
    f"VALUES ({', '.join('?' for _ in STATUS_COLUMNS)}) "
    "ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{column} = excluded.{column}" for column in STATUS_COLUMNS[1:])
)

_SELECT_ROWS = f"SELECT {', '.join(STATUS_COLUMNS)} FROM maka_es_recovery_status"

#: SQLite's default limit on host parameters is 999 on old builds: chunk ``IN (...)`` lists.
_IN_CHUNK = 500


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


class SqliteRecoveryStatusStore:
    """The read model in the event store's own SQLite file, on a connection of its own.

    Why the same file: one file to back up and move, and the read model can never outlive or
    belong to another store. Why its own connection: the eventsourcing pool's connections are
    the event store's; a separate connection keeps our ``BEGIN IMMEDIATE`` transactions
    independent of it. The connection uses WAL and ``synchronous=FULL`` like the event store,
    and a ``busy_timeout`` so a commit waits for a concurrent event-store writer instead of
    failing.
    """

    def __init__(self, db_path: str, *, busy_timeout_ms: int = 10_000) -> None:
        self.db_path = db_path
        self._lock = threading.RLock()
        with typed_store_faults(db_path):
            self._conn = sqlite3.connect(
                db_path,
                isolation_level=None,  # explicit BEGIN/COMMIT only
                check_same_thread=False,  # guarded by self._lock
                timeout=busy_timeout_ms / 1000.0,
            )
        try:
            with typed_store_faults(db_path):
                self._conn.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)};")
                self._conn.execute("PRAGMA journal_mode=WAL;").fetchall()
                self._conn.execute("PRAGMA synchronous=FULL;")
            self._create_tables()
        except BaseException:
            self._conn.close()
            raise

    # -- schema ---------------------------------------------------------------------------------

    def _create_tables(self) -> None:
        """Create the tables if missing; drop and recreate them when the stored schema version
        differs (the read model is derived, so a rebuild replaces any migration)."""
        with self._transaction() as cur:
            cur.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name = 'maka_es_recovery_tracking'"
            )
            if cur.fetchone() is not None:
                cur.execute("SELECT schema_version FROM maka_es_recovery_tracking WHERE id = 1")
                found = cur.fetchone()
                if found is not None and int(found[0]) != SCHEMA_VERSION:
                    for table in _TABLES:
                        cur.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    cur.execute(statement)
            cur.execute(
                "INSERT OR IGNORE INTO maka_es_recovery_tracking (id, schema_version, position) "
                "VALUES (1, ?, 0)",
                (SCHEMA_VERSION,),
            )

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception (a failed COMMIT included) rolls
        everything back. Store faults (locked, full, read-only, ...) are typed
        ``StoreUnavailableError`` refusals."""
        with self._lock, typed_store_faults(self.db_path):
            cur = self._conn.cursor()
            try:
                cur.execute("BEGIN IMMEDIATE")
                yield cur
                cur.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    with suppress(sqlite3.Error):
                        self._conn.execute("ROLLBACK")
                raise
            finally:
                cur.close()

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, typed_store_faults(self.db_path):
            return list(self._conn.execute(sql, params).fetchall())

    # -- RecoveryStatusStore ------------------------------------------------------------------

    def position(self) -> int:
        rows = self._query("SELECT position FROM maka_es_recovery_tracking WHERE id = 1")
        return int(rows[0][0]) if rows else 0

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        wanted = [str(stream_id) for stream_id in stream_ids]
        found: dict[UUID, str] = {}
        for chunk in _chunks(wanted):
            marks = ", ".join("?" for _ in chunk)
            for stream_id, run_id in self._query(
                f"SELECT stream_id, run_id FROM maka_es_recovery_streams "
                f"WHERE stream_id IN ({marks})",
                chunk,
            ):
                found[UUID(stream_id)] = str(run_id)
        return found

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        wanted = list(dict.fromkeys(run_ids))
        found: dict[str, str] = {}
        for chunk in _chunks(wanted):
            marks = ", ".join("?" for _ in chunk)
            for target, claim_id in self._query(
                f"SELECT target_run_id, claim_id FROM maka_es_recovery_claims "
                f"WHERE target_run_id IN ({marks}) ORDER BY rowid",
                chunk,
            ):
                found.setdefault(str(target), str(claim_id))
        return found

    def commit(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_map_additions: Mapping[UUID, str],
        position: int,
        *,
        claim_targets: Mapping[str, str] | None = None,
        expected_position: int | None = None,
    ) -> None:
        with self._transaction() as cur:
            cur.execute("SELECT position FROM maka_es_recovery_tracking WHERE id = 1")
            found = cur.fetchone()
            check_fetched_position(found, position, expected_position)
            cur.executemany(_UPSERT_ROW, [row_values(row) for row in rows])
            cur.executemany(
                "INSERT OR IGNORE INTO maka_es_recovery_streams (stream_id, run_id) VALUES (?, ?)",
                stream_link_values(stream_map_additions),
            )
            cur.executemany(
                "INSERT OR IGNORE INTO maka_es_recovery_claims (claim_id, target_run_id) "
                "VALUES (?, ?)",
                list((claim_targets or {}).items()),
            )
            cur.execute(
                "UPDATE maka_es_recovery_tracking SET position = ? WHERE id = 1", (position,)
            )
            failpoints.hit(INSIDE_COMMIT_FAILPOINT)

    def get(self, run_id: str) -> RunRecoveryStatus | None:
        found = self._query(f"{_SELECT_ROWS} WHERE run_id = ?", (run_id,))
        return row_from_values(found[0]) if found else None

    def all(self) -> list[RunRecoveryStatus]:
        return [row_from_values(values) for values in self._query(f"{_SELECT_ROWS} ORDER BY rowid")]

    def needing_attention(self) -> list[RunRecoveryStatus]:
        return [
            row_from_values(values)
            for values in self._query(f"{_SELECT_ROWS} WHERE needs_attention = 1 ORDER BY rowid")
        ]

    def clear(self) -> None:
        with self._transaction() as cur:
            for table in _TABLES[:3]:
                cur.execute(f"DELETE FROM {table}")
            cur.execute("UPDATE maka_es_recovery_tracking SET position = 0 WHERE id = 1")

    def close(self) -> None:
        with self._lock:
            self._conn.close()
