"""The recovery-status read model in PostgreSQL: one row per run, plus the tracking position.

The same store as ``maka_es.adapters.recovery_status_sqlite`` (same rows, same
``SCHEMA_VERSION``, same drop-and-rebuild on a version change), in the event store's own
database and schema, so both are backed up and restored together. Rows and the tracking
position are committed in ONE transaction (docs/adr/0012-startup-recovery-and-read-model.md).

Why not eventsourcing's tracking table: its position only moves forward, while the read
model is also cleared and rebuilt (position 0) and checks an expected position; the row
holding our position is locked (``SELECT ... FOR UPDATE``) for the whole commit, so two hosts
catching up at once serialise on PostgreSQL's row lock, never on a process-local lock, and
the second one's stale position is refused by ``check_position`` (ADR 0028).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from maka_es import failpoints
from maka_es.adapters.postgres import SessionSettings, typed_pg_faults
from maka_es.adapters.recovery_status_rows import (
    SCHEMA_VERSION,
    STATUS_COLUMNS,
    check_fetched_position,
    row_from_values,
    row_values,
    stream_link_values,
)
from maka_es.recovery.status_store import INSIDE_COMMIT_FAILPOINT, RunRecoveryStatus

__all__ = ["PostgresRecoveryStatusStore"]

_TABLES = ("recovery_status", "recovery_streams", "recovery_claims", "recovery_tracking")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {s}.maka_es_recovery_status ("
    " seq bigserial UNIQUE, run_id text PRIMARY KEY, session_id text NOT NULL,"
    " header_status text NOT NULL, terminal_event boolean NOT NULL,"
    " header_matches_terminal boolean NOT NULL, resume_disposition text,"
    " resume_reasons text NOT NULL, unsettled_operations integer NOT NULL,"
    " claim_state text NOT NULL, claim_id text, sealed_by text, high_water bigint NOT NULL,"
    " needs_attention boolean NOT NULL)",
    "CREATE INDEX IF NOT EXISTS maka_es_recovery_status_attention"
    " ON {s}.maka_es_recovery_status (seq) WHERE needs_attention",
    "CREATE TABLE IF NOT EXISTS {s}.maka_es_recovery_streams ("
    " stream_id uuid PRIMARY KEY, run_id text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {s}.maka_es_recovery_claims ("
    " seq bigserial UNIQUE, claim_id text PRIMARY KEY, target_run_id text NOT NULL)",
    "CREATE INDEX IF NOT EXISTS maka_es_recovery_claims_target"
    " ON {s}.maka_es_recovery_claims (target_run_id)",
    "CREATE TABLE IF NOT EXISTS {s}.maka_es_recovery_tracking ("
    " id integer PRIMARY KEY CHECK (id = 1), schema_version integer NOT NULL,"
    " position bigint NOT NULL)",
)


class PostgresRecoveryStatusStore:
    """The read model on a connection of its own (``synchronous_commit = on``, the event
    store's lock and statement timeouts: ``SessionSettings``), reconnected after a fault;
    statements are serialised in-process only because one psycopg connection is shared by this
    object's threads (cross-process safety is PostgreSQL's row lock)."""

    def __init__(
        self,
        conninfo: Mapping[str, Any],
        schema: str = "",
        session: SessionSettings | None = None,
    ) -> None:
        self._conninfo = dict(conninfo)
        self._session = session or SessionSettings()
        self._secret = str(conninfo.get("password") or "")
        self._schema = schema.strip() or "public"
        self._where = f"{conninfo.get('host')}:{conninfo.get('port')}/{conninfo.get('dbname')}"
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        self._create_tables()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PostgresRecoveryStatusStore:
        """The read model in the database eventsourcing's ``POSTGRES_*`` settings name."""
        conninfo = {
            "host": env.get("POSTGRES_HOST"),
            "port": env.get("POSTGRES_PORT") or "5432",
            "user": env.get("POSTGRES_USER"),
            "password": env.get("POSTGRES_PASSWORD"),
            "dbname": env.get("POSTGRES_DBNAME"),
            "connect_timeout": int(float(env.get("POSTGRES_CONNECT_TIMEOUT") or 5)),
        }
        return cls(conninfo, env.get("POSTGRES_SCHEMA") or "", SessionSettings.from_env(env))

    def _q(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(s=sql.Identifier(self._schema))

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            if self._conn is not None:
                self._conn.close()
            self._conn = psycopg.connect(**self._conninfo, autocommit=True)
            self._session.apply(self._conn)
        return self._conn

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Cursor[Any]]:
        """One transaction; any exception rolls it back. Faults are typed refusals."""
        with self._lock, typed_pg_faults(self._where, secret=self._secret):
            conn = self._connection()
            with conn.transaction(), conn.cursor() as cur:
                yield cur

    def _query(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, typed_pg_faults(self._where, secret=self._secret):
            return list(self._connection().execute(self._q(text), params).fetchall())

    def _create_tables(self) -> None:
        """Create the tables if missing (serialised across hosts by an advisory lock); drop
        and recreate them when the stored schema version differs."""
        with self._transaction() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('maka_es_recovery_status'))")
            cur.execute(self._q("SELECT to_regclass('{s}.maka_es_recovery_tracking')::text"))
            found = cur.fetchone()
            if found is not None and found[0] is not None:
                cur.execute(self._q("SELECT schema_version FROM {s}.maka_es_recovery_tracking"))
                version = cur.fetchone()
                if version is not None and int(version[0]) != SCHEMA_VERSION:
                    for table in _TABLES:
                        cur.execute(self._q(f"DROP TABLE IF EXISTS {{s}}.maka_es_{table}"))
            for statement in _SCHEMA:
                cur.execute(self._q(statement))
            cur.execute(
                self._q(
                    "INSERT INTO {s}.maka_es_recovery_tracking (id, schema_version, position) "
                    "VALUES (1, %s, 0) ON CONFLICT (id) DO NOTHING"
                ),
                (SCHEMA_VERSION,),
            )

    # -- RecoveryStatusStore ------------------------------------------------------------------

    def position(self) -> int:
        rows = self._query("SELECT position FROM {s}.maka_es_recovery_tracking WHERE id = 1")
        return int(rows[0][0]) if rows else 0

    def stream_run_ids(self, stream_ids: Iterable[UUID]) -> dict[UUID, str]:
        wanted = [str(stream_id) for stream_id in stream_ids]
        rows = self._query(
            "SELECT stream_id, run_id FROM {s}.maka_es_recovery_streams "
            "WHERE stream_id = ANY(%s::uuid[])",
            (wanted,),
        )
        return {UUID(str(stream_id)): str(run_id) for stream_id, run_id in rows}

    def claim_ids_for(self, run_ids: Iterable[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for target, claim_id in self._query(
            "SELECT target_run_id, claim_id FROM {s}.maka_es_recovery_claims "
            "WHERE target_run_id = ANY(%s) ORDER BY seq",
            (list(dict.fromkeys(run_ids)),),
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
        columns = ", ".join(STATUS_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in STATUS_COLUMNS[1:])
        marks = ", ".join("%s" for _ in STATUS_COLUMNS)
        with self._transaction() as cur:
            cur.execute(
                self._q(
                    "SELECT position FROM {s}.maka_es_recovery_tracking WHERE id = 1 FOR UPDATE"
                )
            )
            found = cur.fetchone()
            check_fetched_position(found, position, expected_position)
            cur.executemany(
                self._q(
                    f"INSERT INTO {{s}}.maka_es_recovery_status ({columns}) VALUES ({marks}) "
                    f"ON CONFLICT (run_id) DO UPDATE SET {updates}"
                ),
                [row_values(row) for row in rows],
            )
            cur.executemany(
                self._q(
                    "INSERT INTO {s}.maka_es_recovery_streams (stream_id, run_id) "
                    "VALUES (%s, %s) ON CONFLICT DO NOTHING"
                ),
                stream_link_values(stream_map_additions),
            )
            cur.executemany(
                self._q(
                    "INSERT INTO {s}.maka_es_recovery_claims (claim_id, target_run_id) "
                    "VALUES (%s, %s) ON CONFLICT DO NOTHING"
                ),
                list((claim_targets or {}).items()),
            )
            cur.execute(
                self._q("UPDATE {s}.maka_es_recovery_tracking SET position = %s WHERE id = 1"),
                (position,),
            )
            failpoints.hit(INSIDE_COMMIT_FAILPOINT)

    def _select_rows(self, where: str = "") -> list[RunRecoveryStatus]:
        text = f"SELECT {', '.join(STATUS_COLUMNS)} FROM {{s}}.maka_es_recovery_status {where}"
        return [row_from_values(values) for values in self._query(f"{text} ORDER BY seq")]

    def get(self, run_id: str) -> RunRecoveryStatus | None:
        text = f"SELECT {', '.join(STATUS_COLUMNS)} FROM {{s}}.maka_es_recovery_status"
        found = self._query(f"{text} WHERE run_id = %s", (run_id,))
        return row_from_values(found[0]) if found else None

    def all(self) -> list[RunRecoveryStatus]:
        return self._select_rows()

    def needing_attention(self) -> list[RunRecoveryStatus]:
        return self._select_rows("WHERE needs_attention")

    def clear(self) -> None:
        with self._transaction() as cur:
            for table in _TABLES[:3]:
                cur.execute(self._q(f"DELETE FROM {{s}}.maka_es_{table}"))
            cur.execute(self._q("UPDATE {s}.maka_es_recovery_tracking SET position = 0"))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
