"""The recovery-status read model's SQL backends (SQLite, PostgreSQL), and which one an event
store gets.

Why one module: both backends keep the same rows under the same ``SCHEMA_VERSION``
(docs/adr/0012-startup-recovery-and-read-model.md) with the same statements; only the
placeholder, the schema prefix, the row order and how a schema is created differ, and those
are all that is written per dialect here. The rules (the compare-and-set on the position, the
failpoint inside the commit) are not here at all: they are ``RecoveryStatusStore.commit`` in
``maka_es.recovery.model.status_store``, written once over any backend.

Why rows and the tracking position are committed together: a projector that crashed after
writing rows but before recording how far it got would reprocess (harmless), but one that
recorded the position without the rows would silently skip facts forever. Both go into ONE
transaction. Why not eventsourcing's tracking table: see the amendment of issue 22 in
docs/adr/0028-postgresql-as-the-distributed-store.md.

The read model is *derived*: it can always be thrown away and rebuilt from the event store
(``RecoveryStatusProjector.rebuild``), so a schema change drops and recreates the tables
instead of migrating them.

Which backend: the one that matches the event store's own recorder object
(:func:`recovery_status_store_for`), never a setting's spelling. psycopg is the ``postgres``
extra, so this module never imports it at its top: the PostgreSQL backend imports it when it is
built, which only happens for a PostgreSQL recorder (that recorder already loaded it).
"""

from __future__ import annotations

import json
import sqlite3
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final
from uuid import UUID

from eventsourcing.popo import POPORecorder
from eventsourcing.sqlite import SQLiteRecorder

from maka_es.adapters.sqlite import sqlite_path_from_dbname, typed_store_faults
from maka_es.errors import RecoveryStatusUnsupportedError
from maka_es.recovery.model.status_store import (
    InMemoryRecoveryStatusBackend,
    RecoveryStatusBackend,
    RecoveryStatusStore,
    RecoveryStatusWrite,
    RunRecoveryStatus,
)

if TYPE_CHECKING:
    import psycopg

    from maka_es.adapters.postgres import SessionSettings

__all__ = [
    "SCHEMA_VERSION",
    "STATUS_COLUMNS",
    "PostgresRecoveryStatusBackend",
    "RecoveryStatusUnsupportedError",
    "SqliteRecoveryStatusBackend",
    "recovery_status_store_for",
    "row_from_values",
    "row_values",
]

#: Bump when the tables change shape or a row's meaning changes: the read model is then dropped
#: and rebuilt from scratch. 2: a terminal header without a terminal event needs attention.
SCHEMA_VERSION = 2

#: The row's columns, in table order (``run_id`` first: it is the upsert's conflict key).
STATUS_COLUMNS = (
    "run_id",
    "session_id",
    "header_status",
    "terminal_event",
    "header_matches_terminal",
    "resume_disposition",
    "resume_reasons",
    "unsettled_operations",
    "claim_state",
    "claim_id",
    "sealed_by",
    "high_water",
    "needs_attention",
)

_TABLES: Final = (
    "maka_es_recovery_status",
    "maka_es_recovery_streams",
    "maka_es_recovery_claims",
    "maka_es_recovery_tracking",
)

#: SQLite's default limit on host parameters is 999 on old builds: chunk ``IN (...)`` lists.
_IN_CHUNK: Final = 500

#: How long a SQLite read model waits for a lock when the event store names no timeout.
_DEFAULT_BUSY_TIMEOUT_MS: Final = 10_000


def row_values(row: RunRecoveryStatus) -> tuple[Any, ...]:
    """The row as statement parameters in ``STATUS_COLUMNS`` order (reasons as compact JSON;
    both drivers bind a ``bool`` natively, SQLite as the integer 0/1)."""
    reasons = json.dumps(list(row.resume_reasons), separators=(",", ":"))
    return tuple(
        reasons if column == "resume_reasons" else getattr(row, column) for column in STATUS_COLUMNS
    )


def row_from_values(values: Sequence[Any]) -> RunRecoveryStatus:
    """Inverse of :func:`row_values` for a fetched tuple."""
    data = dict(zip(STATUS_COLUMNS, values, strict=True))
    data["resume_reasons"] = json.loads(data["resume_reasons"])
    return RunRecoveryStatus.from_json(data)


# -- the statements, once for both dialects -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Dialect:
    """What differs between the two SQL dialects for the same statements."""

    prefix: str  # the schema, quoted, with its dot ("" for SQLite)
    mark: str  # the parameter placeholder
    lock: str  # appended to the read of the position inside a commit
    order: str  # the column that keeps the order rows and claims were first written in
    attention: str  # the condition of a row that needs attention (matches the partial index)

    def sql(self, text: str) -> str:
        """``text`` with ``{p}`` the table prefix and ``{m}`` the placeholder."""
        return text.format(p=self.prefix, m=self.mark)


_SQLITE: Final = _Dialect("", "?", "", "rowid", "needs_attention = 1")


class _SqlWrite:
    """A commit's statements inside one open transaction (``cur``), in either dialect."""

    def __init__(self, cur: Any, dialect: _Dialect) -> None:
        self._cur = cur
        self._d = dialect

    def locked_position(self) -> int:
        self._cur.execute(
            self._d.sql("SELECT position FROM {p}maka_es_recovery_tracking WHERE id = 1")
            + self._d.lock
        )
        found = self._cur.fetchone()
        return 0 if found is None else int(found[0])

    def write(
        self,
        rows: Sequence[RunRecoveryStatus],
        stream_links: Mapping[UUID, str],
        claim_targets: Mapping[str, str],
        position: int,
    ) -> None:
        d, cur = self._d, self._cur
        marks = ", ".join(d.mark for _ in STATUS_COLUMNS)
        updates = ", ".join(f"{c} = excluded.{c}" for c in STATUS_COLUMNS[1:])
        cur.executemany(
            d.sql(f"INSERT INTO {{p}}maka_es_recovery_status ({', '.join(STATUS_COLUMNS)}) ")
            + f"VALUES ({marks}) ON CONFLICT (run_id) DO UPDATE SET {updates}",
            [row_values(row) for row in rows],
        )
        cur.executemany(
            d.sql(
                "INSERT INTO {p}maka_es_recovery_streams (stream_id, run_id) VALUES ({m}, {m}) "
                "ON CONFLICT DO NOTHING"
            ),
            [(str(stream_id), run_id) for stream_id, run_id in stream_links.items()],
        )
        cur.executemany(
            d.sql(
                "INSERT INTO {p}maka_es_recovery_claims (claim_id, target_run_id) "
                "VALUES ({m}, {m}) ON CONFLICT DO NOTHING"
            ),
            list(claim_targets.items()),
        )
        cur.execute(
            d.sql("UPDATE {p}maka_es_recovery_tracking SET position = {m} WHERE id = 1"),
            (position,),
        )


class _SqlBackend(ABC):
    """The reads and the clearing both dialects share; a subclass owns the connection."""

    _dialect: _Dialect

    @abstractmethod
    def _cursor(self) -> AbstractContextManager[Any]:
        """A cursor inside one transaction, committed when the block ends well."""

    @abstractmethod
    def _query(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """The rows of one read (``text`` in :meth:`_Dialect.sql` form)."""

    @contextmanager
    def transaction(self) -> Iterator[RecoveryStatusWrite]:
        with self._cursor() as cur:
            yield _SqlWrite(cur, self._dialect)

    def position(self) -> int:
        found = self._query("SELECT position FROM {p}maka_es_recovery_tracking WHERE id = 1")
        return int(found[0][0]) if found else 0

    def claim_links(self, run_ids: Sequence[str]) -> list[tuple[str, str]]:
        return [
            (str(target), str(claim_id))
            for chunk in _chunks(run_ids)
            for target, claim_id in self._query(
                "SELECT target_run_id, claim_id FROM {p}maka_es_recovery_claims "
                f"WHERE target_run_id IN ({self._marks(chunk)}) ORDER BY {self._dialect.order}",
                chunk,
            )
        ]

    def rows(
        self, run_id: str | None = None, *, needing_attention: bool = False
    ) -> list[RunRecoveryStatus]:
        text = f"SELECT {', '.join(STATUS_COLUMNS)} FROM {{p}}maka_es_recovery_status"
        params: tuple[str, ...] = ()
        if run_id is not None:
            text, params = text + " WHERE run_id = {m}", (run_id,)
        elif needing_attention:
            text += f" WHERE {self._dialect.attention}"
        found = self._query(f"{text} ORDER BY {self._dialect.order}", params)
        return [row_from_values(values) for values in found]

    def clear(self) -> None:
        with self._cursor() as cur:
            for table in _TABLES[:3]:
                cur.execute(self._dialect.sql(f"DELETE FROM {{p}}{table}"))
            cur.execute(self._dialect.sql("UPDATE {p}maka_es_recovery_tracking SET position = 0"))

    def _marks(self, chunk: Sequence[str]) -> str:
        return ", ".join(self._dialect.mark for _ in chunk)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _IN_CHUNK):
        yield items[start : start + _IN_CHUNK]


# -- SQLite ---------------------------------------------------------------------------------------

_SQLITE_SCHEMA: Final = """
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


class SqliteRecoveryStatusBackend(_SqlBackend):
    """The read model in the event store's own SQLite file, on a connection of its own.

    Why the same file: one file to back up and move, and the read model can never outlive or
    belong to another store. Why its own connection: the eventsourcing pool's connections are
    the event store's; a separate connection keeps our ``BEGIN IMMEDIATE`` transactions
    independent of it (and ``BEGIN IMMEDIATE`` is what holds the position during a commit).
    The connection uses WAL and ``synchronous=FULL`` like the event store, and a
    ``busy_timeout`` so a commit waits for a concurrent event-store writer instead of failing.
    """

    _dialect = _SQLITE

    def __init__(self, db_path: str, *, busy_timeout_ms: int = _DEFAULT_BUSY_TIMEOUT_MS) -> None:
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

    def _create_tables(self) -> None:
        """Create the tables if missing; drop and recreate them when the stored schema version
        differs (the read model is derived, so a rebuild replaces any migration)."""
        with self._cursor() as cur:
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
            for statement in _SQLITE_SCHEMA.split(";"):
                if statement.strip():
                    cur.execute(statement)
            cur.execute(
                "INSERT OR IGNORE INTO maka_es_recovery_tracking (id, schema_version, position) "
                "VALUES (1, ?, 0)",
                (SCHEMA_VERSION,),
            )

    @contextmanager
    def _cursor(self) -> Iterator[sqlite3.Cursor]:
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

    def _query(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, typed_store_faults(self.db_path):
            return list(self._conn.execute(self._dialect.sql(text), params).fetchall())

    def stream_run_ids(self, stream_ids: Sequence[UUID]) -> dict[UUID, str]:
        wanted = [str(stream_id) for stream_id in stream_ids]
        return {
            UUID(stream_id): str(run_id)
            for chunk in _chunks(wanted)
            for stream_id, run_id in self._query(
                "SELECT stream_id, run_id FROM maka_es_recovery_streams "
                f"WHERE stream_id IN ({self._marks(chunk)})",
                chunk,
            )
        }

    def close(self) -> None:
        with self._lock:
            self._conn.close()


# -- PostgreSQL -----------------------------------------------------------------------------------

_PG_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS {p}maka_es_recovery_status ("
    " seq bigserial UNIQUE, run_id text PRIMARY KEY, session_id text NOT NULL,"
    " header_status text NOT NULL, terminal_event boolean NOT NULL,"
    " header_matches_terminal boolean NOT NULL, resume_disposition text,"
    " resume_reasons text NOT NULL, unsettled_operations integer NOT NULL,"
    " claim_state text NOT NULL, claim_id text, sealed_by text, high_water bigint NOT NULL,"
    " needs_attention boolean NOT NULL)",
    "CREATE INDEX IF NOT EXISTS maka_es_recovery_status_attention"
    " ON {p}maka_es_recovery_status (seq) WHERE needs_attention",
    "CREATE TABLE IF NOT EXISTS {p}maka_es_recovery_streams ("
    " stream_id uuid PRIMARY KEY, run_id text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS {p}maka_es_recovery_claims ("
    " seq bigserial UNIQUE, claim_id text PRIMARY KEY, target_run_id text NOT NULL)",
    "CREATE INDEX IF NOT EXISTS maka_es_recovery_claims_target"
    " ON {p}maka_es_recovery_claims (target_run_id)",
    "CREATE TABLE IF NOT EXISTS {p}maka_es_recovery_tracking ("
    " id integer PRIMARY KEY CHECK (id = 1), schema_version integer NOT NULL,"
    " position bigint NOT NULL)",
)


class PostgresRecoveryStatusBackend(_SqlBackend):
    """The read model in the event store's own database and schema (backed up and restored
    together), on a connection of its own (``synchronous_commit = on``, the event store's lock
    and statement timeouts: ``SessionSettings``), reconnected after a fault. Statements are
    serialised in-process only because one psycopg connection is shared by this object's
    threads: the row holding the position is locked ``FOR UPDATE`` for a whole commit, so two
    hosts catching up at once serialise on PostgreSQL's row lock, never on a process-local
    lock, and the second one's stale position is refused (ADR 0028)."""

    def __init__(
        self,
        conninfo: Mapping[str, Any],
        schema: str = "",
        session: SessionSettings | None = None,
    ) -> None:
        from maka_es.adapters.postgres import SessionSettings  # the postgres extra (see above)

        self._conninfo = dict(conninfo)
        self._session = session or SessionSettings()
        self._secret = str(conninfo.get("password") or "")
        self._schema = schema.strip() or "public"
        self._where = f"{conninfo.get('host')}:{conninfo.get('port')}/{conninfo.get('dbname')}"
        self._lock = threading.RLock()
        self._conn: psycopg.Connection[Any] | None = None
        self._create_tables()

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PostgresRecoveryStatusBackend:
        """The read model alone, in the database eventsourcing's ``POSTGRES_*`` settings name
        (for a tool or test without the event store; an application chooses from its
        recorder, :func:`recovery_status_store_for`)."""
        from maka_es.adapters.postgres import SessionSettings

        conninfo = {
            "host": env.get("POSTGRES_HOST"),
            "port": env.get("POSTGRES_PORT") or "5432",
            "user": env.get("POSTGRES_USER"),
            "password": env.get("POSTGRES_PASSWORD"),
            "dbname": env.get("POSTGRES_DBNAME"),
            "connect_timeout": int(float(env.get("POSTGRES_CONNECT_TIMEOUT") or 5)),
        }
        return cls(conninfo, env.get("POSTGRES_SCHEMA") or "", SessionSettings.from_env(env))

    @contextmanager
    def _faults(self) -> Iterator[None]:
        from maka_es.adapters.postgres import typed_pg_faults

        with self._lock, typed_pg_faults(self._where, secret=self._secret):
            yield

    def _connection(self) -> psycopg.Connection[Any]:
        import psycopg

        if self._conn is None or self._conn.closed or self._conn.broken:
            if self._conn is not None:
                self._conn.close()
            self._conn = psycopg.connect(**self._conninfo, autocommit=True)
            self._session.apply(self._conn)
        return self._conn

    @contextmanager
    def _cursor(self) -> Iterator[psycopg.Cursor[Any]]:
        """One transaction; any exception rolls it back. Faults are typed refusals."""
        with self._faults():
            conn = self._connection()
            with conn.transaction(), conn.cursor() as cur:
                yield cur

    def _query(self, text: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._faults():
            return list(self._connection().execute(self._dialect.sql(text), params).fetchall())

    def _create_tables(self) -> None:
        """Learn the quoted schema, create the tables if missing (serialised across hosts by an
        advisory lock), and drop and recreate them when the stored schema version differs."""
        from psycopg import sql

        with self._faults():
            prefix = sql.Identifier(self._schema).as_string(self._connection()) + "."
        self._dialect = _Dialect(prefix, "%s", " FOR UPDATE", "seq", "needs_attention")
        q = self._dialect.sql
        with self._cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('maka_es_recovery_status'))")
            cur.execute("SELECT to_regclass(%s)::text", (f"{prefix}maka_es_recovery_tracking",))
            found = cur.fetchone()
            if found is not None and found[0] is not None:
                cur.execute(q("SELECT schema_version FROM {p}maka_es_recovery_tracking"))
                version = cur.fetchone()
                if version is not None and int(version[0]) != SCHEMA_VERSION:
                    for table in _TABLES:
                        cur.execute(q(f"DROP TABLE IF EXISTS {{p}}{table}"))
            for statement in _PG_SCHEMA:
                cur.execute(q(statement))
            cur.execute(
                q(
                    "INSERT INTO {p}maka_es_recovery_tracking (id, schema_version, position) "
                    "VALUES (1, %s, 0) ON CONFLICT (id) DO NOTHING"
                ),
                (SCHEMA_VERSION,),
            )

    def stream_run_ids(self, stream_ids: Sequence[UUID]) -> dict[UUID, str]:
        rows = self._query(
            "SELECT stream_id, run_id FROM {p}maka_es_recovery_streams "
            "WHERE stream_id = ANY(%s::uuid[])",
            ([str(stream_id) for stream_id in stream_ids],),
        )
        return {UUID(str(stream_id)): str(run_id) for stream_id, run_id in rows}

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


# -- which backend --------------------------------------------------------------------------------


def recovery_status_store_for(recorder: object) -> RecoveryStatusStore:
    """The read-model store that belongs with the event store whose recorder is ``recorder``.

    Chosen by what the recorder IS (eventsourcing's SQLite, PostgreSQL or in-memory recorder
    classes, which maka_es's own adapters extend), and configured from the recorder's own
    datastore, so the read model lives exactly where the facts it summarises live:

    * SQLite file → :class:`SqliteRecoveryStatusBackend` on the same file, waiting for a lock
      as long as the event store does (so the rows survive a restart with the facts);
    * in-memory (``eventsourcing.popo``, or an SQLite ``:memory:`` database a second connection
      cannot share) → :class:`InMemoryRecoveryStatusBackend`, rebuilt by the first catch-up of
      each process;
    * PostgreSQL → :class:`PostgresRecoveryStatusBackend` in the same database and schema;
    * anything else → :class:`RecoveryStatusUnsupportedError` (``recovery_status_unsupported``).
    """
    if isinstance(recorder, POPORecorder):
        return RecoveryStatusStore(InMemoryRecoveryStatusBackend())
    if isinstance(recorder, SQLiteRecorder):
        return RecoveryStatusStore(_sqlite_backend_of(recorder))
    # A PostgreSQL recorder exists only once eventsourcing.postgres (and psycopg) is loaded.
    es_postgres = sys.modules.get("eventsourcing.postgres")
    if es_postgres is not None and isinstance(recorder, es_postgres.PostgresRecorder):
        return RecoveryStatusStore(_postgres_backend_of(recorder.datastore))
    kind = f"{type(recorder).__module__}.{type(recorder).__qualname__}"
    raise RecoveryStatusUnsupportedError(
        f"no recovery-status store for an event store recorded by {kind}",
        detail={"recorder": kind},
    )


def _sqlite_backend_of(recorder: SQLiteRecorder) -> RecoveryStatusBackend:
    """The SQLite file's backend, or an in-memory one for a database only its pool can see."""
    pool = recorder.datastore.pool
    path = sqlite_path_from_dbname(pool.db_name)
    if path is None:
        return InMemoryRecoveryStatusBackend()
    timeout_s = pool.lock_timeout  # SQLITE_LOCK_TIMEOUT, validated by eventsourcing
    busy_ms = _DEFAULT_BUSY_TIMEOUT_MS if not timeout_s else int(timeout_s) * 1000
    return SqliteRecoveryStatusBackend(path, busy_timeout_ms=busy_ms)


def _postgres_backend_of(datastore: Any) -> PostgresRecoveryStatusBackend:
    """The backend in ``datastore``'s database and schema, connecting as its pool does, with
    its session bounds (never its read-only switch: the read model is written by readers
    too, as on SQLite)."""
    from maka_es.adapters.postgres import DurablePostgresDatastore, SessionSettings

    pool = datastore.pool
    conninfo = {
        key: value
        for key, value in dict(pool.kwargs or {}).items()
        if key in {"host", "port", "user", "password", "dbname"}
    }
    if pool.get_password_func is not None:
        conninfo["password"] = pool.get_password_func()
    conninfo["connect_timeout"] = max(round(pool.timeout), 1)
    if isinstance(datastore, DurablePostgresDatastore):
        session = replace(datastore.session, read_only=False)
    else:
        session = SessionSettings(
            lock_timeout_s=int(datastore.lock_timeout),
            idle_in_transaction_ms=int(datastore.idle_in_transaction_session_timeout * 1000),
        )
    return PostgresRecoveryStatusBackend(conninfo, datastore.schema, session)
