"""The PostgreSQL store: eventsourcing's PostgreSQL persistence with maka_es durability and
its faults typed (ADR 0028).

Why a factory of our own over ``eventsourcing.postgres``:

* **durability**: every connection sets ``synchronous_commit = on`` itself, so a server or
  role configured with ``off`` cannot turn an acknowledged commit into one a server crash
  loses (the promise SQLite's ``synchronous=FULL`` gives; a test reads it back);
* **bounded waits**: every connection runs under the configured ``lock_timeout`` and
  ``statement_timeout`` (:class:`SessionSettings`), not only the insert
  transaction, so no read waits without bound behind another session's lock;
* **typed faults**: every driver error is a ``StoreUnavailableError`` (see *Faults* below),
  and eventsourcing's retries are not used: a write that is retried after an unknown commit
  outcome would be reported as a conflict with itself;
* **unknown outcome**: the connection dropping while COMMIT is in flight raises
  ``StoreOutcomeUnknownError`` (``store_outcome_unknown``), never success or a plain failure;
* the failpoint inside the write transaction that the crash tests use.

Uniqueness and ordering are PostgreSQL's own: the primary key on
``(originator_id, originator_version)`` is the optimistic-concurrency check every claim and
run-ownership command relies on, and eventsourcing's ``LOCK TABLE ... IN EXCLUSIVE MODE``
makes notification ids follow commit order. ``POSTGRES_ENABLE_DB_FUNCTIONS`` stays off.

Select it with ``PERSISTENCE_MODULE=maka_es.adapters.postgres`` and eventsourcing's
``POSTGRES_*`` settings, or with a store URL (``RuntimeApplication.open``). Only a PostgreSQL
store imports this module (psycopg is the ``postgres`` extra).

**Faults** become the library's own errors, like SQLite's (``maka_es.adapters.sqlite``), in
one translation at the connection checkout: every read and write of the PostgreSQL event store
(eventsourcing's recorders) and of the recovery-status read model takes its connection from
``get_connection`` of a datastore; a fault raised by the driver anywhere inside is typed there
once. It also stops eventsourcing's own retries (ten attempts, 0.2 s apart, on every
operational error): a host gets a prompt, typed refusal and decides itself whether to retry
(ADR 0028). ``IntegrityError`` (a lost race on the store's uniqueness) passes through: the
application classifies it as a conflict, exactly as on SQLite. The reason is read from the
SQLSTATE class when the server sent one, else from the kind of failure (refused, dropped, pool
closed). A refusal while connecting carries no SQLSTATE (libpq keeps only the server's
message), so it is read from the server's message: a wrong password or role is
``store_auth_failed`` and a missing database ``store_database_missing``, permanent
configuration errors reported with the server's reason (the password is never part of a
message).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, Final

import psycopg
import psycopg_pool
from eventsourcing import postgres as es_postgres
from eventsourcing.persistence import IntegrityError, PersistenceError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from psycopg import Connection, Cursor, sql
from psycopg.rows import DictRow

from maka_es import failpoints
from maka_es.adapters.event_store import READ_ONLY_ENV
from maka_es.errors import (
    MakaError,
    StoreAuthFailedError,
    StoreDatabaseMissingError,
    StoreOutcomeUnknownError,
    StoreSchemaMissingError,
    StoreUnavailableError,
)

# === faults: every driver error becomes a typed store fault =======================================

#: SQLSTATE (or its two-character class) → the ``reason`` a host reads in ``detail``.
_REASONS: Final = {
    "57014": "timeout",  # query_canceled (statement_timeout)
    "55P03": "locked",  # lock_not_available (lock_timeout)
    "40P01": "deadlock",
    "40001": "serialization_failure",
    "25P03": "timeout",  # idle_in_transaction_session_timeout
    "57P01": "server_shutdown",  # admin_shutdown, pg_terminate_backend
    "57P02": "server_shutdown",  # crash_shutdown
    "57P03": "server_starting",  # cannot_connect_now
    "53": "resources",  # insufficient resources (disk full, out of memory, too many conns)
    "08": "connection_lost",
    "28": "authentication_failed",
    "3D": "database_missing",
    "42P01": "schema_missing",  # undefined_table
    "25006": "read_only",
}

#: The server's refusal of a new connection (libpq gives its message, not its SQLSTATE) →
#: the ``reason``; PostgreSQL's own wording, as it sends it with ``lc_messages`` English.
_CONNECT_REFUSALS: Final = (
    (re.compile(r'database "[^"]*" does not exist'), "database_missing"),  # 3D000
    (
        re.compile(
            r"password authentication failed|authentication failed for user|"
            r"no pg_hba\.conf entry|pg_hba\.conf rejects|role \"[^\"]*\" does not exist|"
            r"no password supplied|permission denied for database|"
            r"role \"[^\"]*\" is not permitted to log in"
        ),
        "authentication_failed",  # 28P01, 28000, 42501 (CONNECT)
    ),
    (re.compile(r"the database system is (starting up|in recovery mode)"), "server_starting"),
    (re.compile(r"the database system is (shutting down|not accepting)"), "server_shutdown"),
    (re.compile(r"too many clients|remaining connection slots are reserved"), "resources"),
)

#: The refinements of ``store_unavailable`` a ``reason`` maps to.
_REFINED: Final[dict[str, type[StoreUnavailableError]]] = {
    "authentication_failed": StoreAuthFailedError,
    "database_missing": StoreDatabaseMissingError,
}


def _psycopg_cause(exc: BaseException) -> BaseException | None:
    """The driver error behind ``exc`` (eventsourcing wraps it as ``__cause__``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, psycopg.Error | psycopg_pool.PoolTimeout):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _reason(exc: BaseException, sqlstate: str | None) -> str:
    if sqlstate is not None:
        for key in (sqlstate, sqlstate[:2]):
            if key in _REASONS:
                return _REASONS[key]
        return "error"
    if isinstance(exc, psycopg_pool.PoolClosed):
        return "closed"
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return "unreachable"
    if isinstance(exc, psycopg.OperationalError):
        for pattern, reason in _CONNECT_REFUSALS:
            if pattern.search(str(exc)):
                return reason
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return "connection_lost"
    return "error"


def _scrubbed(text: str, secret: str) -> str:
    """``text`` with ``secret`` (the password) replaced, in case a message ever echoes it."""
    return text.replace(secret, "***") if secret else text


def pg_store_fault(
    exc: BaseException, *, where: str, secret: str = "", connecting: bool = False
) -> StoreUnavailableError:
    """The typed refusal for a PostgreSQL fault ``exc`` on the server ``where`` (host:port/db,
    never the password ``secret``); ``connecting``: ``exc`` was raised making a connection, so
    a failure without a server's reason is ``unreachable``."""
    cause = _psycopg_cause(exc) or exc
    sqlstate = getattr(cause, "sqlstate", None)
    sqlstate = sqlstate if isinstance(sqlstate, str) else None
    reason = _reason(cause, sqlstate)
    if connecting and reason == "connection_lost":
        reason = "unreachable"
    detail: dict[str, str] = {"reason": reason, "errorClass": type(cause).__name__}
    if sqlstate is not None:
        detail["sqlstate"] = sqlstate
    detail["server"] = where
    said = _scrubbed(f"{type(cause).__name__}: {cause}", secret)
    if reason == "schema_missing":
        return StoreSchemaMissingError(
            f"the PostgreSQL database {where} has no maka_es tables ({cause}); nothing was "
            "read or written",
            detail=detail,
        )
    if reason in _REFINED:
        return _REFINED[reason](
            f"the PostgreSQL server {where} refused the connection ({reason}): {said}; nothing "
            "was read or written",
            detail=detail,
        )
    return StoreUnavailableError(
        f"the PostgreSQL store {where} is unavailable ({reason}): {said}", detail=detail
    )


@contextmanager
def typed_pg_faults(where: str, *, secret: str = "", connecting: bool = False) -> Iterator[None]:
    """Re-raise PostgreSQL faults raised inside the block as :class:`StoreUnavailableError`
    (see :func:`pg_store_fault`). ``IntegrityError`` (either family) and the library's own
    errors pass through unchanged."""
    try:
        yield
    except (MakaError, IntegrityError, psycopg.IntegrityError):
        raise
    except (psycopg.Error, psycopg_pool.PoolTimeout, PersistenceError) as exc:
        raise pg_store_fault(exc, where=where, secret=secret, connecting=connecting) from exc


# === the durable datastore, its recorder and the factory ==========================================

#: Statement timeout for every connection of the store, in milliseconds (0: none).
STATEMENT_TIMEOUT_ENV: Final = "MAKA_PG_STATEMENT_TIMEOUT_MS"


@dataclass(frozen=True, slots=True)
class SessionSettings:
    """The bounds of one store's sessions; ``0`` means none, as in PostgreSQL itself."""

    lock_timeout_s: int = 0
    statement_timeout_ms: int = 0
    idle_in_transaction_ms: int = 0
    read_only: bool = False

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SessionSettings:
        """The settings eventsourcing's ``POSTGRES_*`` keys (seconds, as eventsourcing reads
        them) and ``MAKA_PG_STATEMENT_TIMEOUT_MS`` name."""
        return cls(
            lock_timeout_s=_int(env.get("POSTGRES_LOCK_TIMEOUT")),
            statement_timeout_ms=_int(env.get(STATEMENT_TIMEOUT_ENV)),
            idle_in_transaction_ms=1000
            * _int(env.get("POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT")),
        )

    def apply(self, conn: Connection[Any]) -> None:
        """Set the bounds (and durability) on ``conn``, outside any transaction."""
        conn.execute("SET synchronous_commit = on")
        conn.execute(sql.SQL("SET lock_timeout = {}").format(f"{self.lock_timeout_s}s"))
        conn.execute(sql.SQL("SET statement_timeout = {}").format(f"{self.statement_timeout_ms}ms"))
        conn.execute(
            sql.SQL("SET idle_in_transaction_session_timeout = {}").format(
                f"{self.idle_in_transaction_ms}ms"
            )
        )
        if self.read_only:
            conn.execute("SET default_transaction_read_only = on")


def _int(value: str | None) -> int:
    """A whole number of a setting; unset or blank is 0 (eventsourcing validated the value
    when the event store was built, before the read model reads it)."""
    text = (value or "").strip()
    return int(float(text)) if text else 0


class DurablePostgresDatastore(PostgresDatastore):
    """eventsourcing's datastore: every connection durable and bounded, every fault typed."""

    #: Set by the factory before the first connection is made.
    session = SessionSettings()

    @property
    def read_only(self) -> bool:
        """Whether every transaction is read-only in the server (``MAKA_PG_READ_ONLY``)."""
        return self.session.read_only

    @property
    def where(self) -> str:
        """``host:port/dbname`` of the server, for error details (never the password)."""
        kwargs = _pool_kwargs(self)
        return f"{kwargs.get('host')}:{kwargs.get('port')}/{kwargs.get('dbname')}"

    def after_connect_func(self) -> Callable[[Connection[Any]], None]:
        base = super().after_connect_func()
        datastore = self

        def after_connect(conn: Connection[Any]) -> None:
            base(conn)
            datastore.session.apply(conn)

        return after_connect

    @property
    def secret(self) -> str:
        """The password the pool connects with, to keep it out of every message."""
        return str(_pool_kwargs(self).get("password") or "")

    @contextmanager
    def get_connection(self) -> Iterator[Connection[DictRow]]:
        with typed_pg_faults(self.where, secret=self.secret), super().get_connection() as conn:
            yield conn

    def check_connect(self) -> None:
        """Connect once directly, with the pool's settings and ``connect_timeout``, and close.

        Why not only the pool: its workers retry a failed connect in the background and only
        log the error, so the first checkout waits the whole ``connect_timeout`` and reports
        ``unreachable`` even when the server answered at once that the password is wrong or the
        database missing. A direct connect raises the server's refusal itself, typed at once
        (``store_auth_failed``, ``store_database_missing``)."""
        kwargs = dict(_pool_kwargs(self))
        if self.pool.get_password_func is not None:
            kwargs["password"] = self.pool.get_password_func()
        kwargs["connect_timeout"] = max(round(self.pool.timeout), 1)
        secret = str(kwargs.get("password") or "")
        with typed_pg_faults(self.where, secret=secret, connecting=True):
            psycopg.connect(**kwargs).close()


class FailpointPostgresApplicationRecorder(PostgresApplicationRecorder):
    """The library's recorder, written without its retries (see the module docstring), with
    the crash failpoint after the inserts and the COMMIT watched for an unknown outcome."""

    def create_table(self) -> None:
        """The library's schema statements, in one transaction under an advisory lock.

        Why: several hosts open one store at the same moment (ADR 0028), and PostgreSQL's DDL
        is not safe concurrently: ``CREATE OR REPLACE FUNCTION`` fails with "tuple
        concurrently updated" and a racing ``CREATE TYPE`` / ``CREATE TABLE`` with a unique
        violation in the catalogue. The lock serialises the opening hosts on the server."""
        with (
            self.datastore.get_connection() as conn,
            conn.transaction(),
            conn.cursor() as curs,
        ):
            curs.execute("SELECT pg_advisory_xact_lock(hashtext('maka_es_event_schema'))")
            for statement in self.sql_create_statements:
                if "CREATE TYPE" in statement.as_string():
                    # no IF NOT EXISTS for types: a savepoint keeps the transaction usable
                    with suppress(psycopg.errors.DuplicateObject), conn.transaction():
                        curs.execute(statement, prepare=False)
                else:
                    curs.execute(statement, prepare=False)
        self.datastore.register_type_adapters()

    def insert_events(
        self, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        notification_ids: Sequence[int] | None = None
        committing = False
        with self.datastore.get_connection() as conn:
            try:
                with conn.transaction():
                    with conn.cursor() as curs:
                        notification_ids = self._write(curs, stored_events, **kwargs)
                    committing = True
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                if committing:
                    raise _outcome_unknown(exc, self.datastore) from exc
                raise
        return notification_ids

    def _write(
        self, curs: Cursor[DictRow], stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        """The inserts of one save (locks, rows, notification ids), then the failpoint."""
        self._insert_events(curs, stored_events, **kwargs)
        ids: Sequence[int] | None = None
        if stored_events:
            self._insert_stored_events(curs, stored_events, **kwargs)
            ids = self._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
        failpoints.hit(failpoints.INSIDE_SAVE_BEFORE_COMMIT)
        return ids


def _pool_kwargs(datastore: PostgresDatastore) -> dict[str, Any]:
    """The connection keywords eventsourcing gave the pool (a dict, as it always builds it)."""
    kwargs = datastore.pool.kwargs
    return kwargs if isinstance(kwargs, dict) else {}


def _outcome_unknown(exc: BaseException, datastore: PostgresDatastore) -> StoreOutcomeUnknownError:
    where = datastore.where if isinstance(datastore, DurablePostgresDatastore) else "postgres"
    return StoreOutcomeUnknownError(
        f"the connection to {where} failed while COMMIT was in flight ({type(exc).__name__}: "
        f"{exc}): the command may or may not be durable; re-read before retrying",
        detail={"reason": "commit_interrupted", "server": where},
    )


class Factory(es_postgres.PostgresFactory):
    """eventsourcing infrastructure factory selected by ``PERSISTENCE_MODULE``."""

    application_recorder_class = FailpointPostgresApplicationRecorder

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        old = self.datastore
        kwargs = _pool_kwargs(old)
        self.datastore = DurablePostgresDatastore(
            dbname=str(kwargs["dbname"]),
            host=str(kwargs["host"]),
            port=kwargs["port"],
            user=str(kwargs["user"]),
            password=str(kwargs.get("password") or ""),
            connect_timeout=old.pool.timeout,
            idle_in_transaction_session_timeout=old.idle_in_transaction_session_timeout,
            pool_size=old.pool.min_size,
            max_overflow=old.pool.max_size - old.pool.min_size,
            max_waiting=old.pool.max_waiting,
            conn_max_age=old.pool.max_lifetime,
            pre_ping=old.pre_ping,
            lock_timeout=old.lock_timeout,
            schema=old.schema,
            get_password_func=old.pool.get_password_func,
            single_row_tracking=old.single_row_tracking,
            originator_id_type=old.originator_id_type,  # type: ignore[arg-type]
            enable_db_functions=False,
        )
        self.datastore.session = SessionSettings(
            lock_timeout_s=old.lock_timeout,
            statement_timeout_ms=int(self.env.get(STATEMENT_TIMEOUT_ENV) or 0),
            idle_in_transaction_ms=int(old.idle_in_transaction_session_timeout * 1000),
            read_only=str(self.env.get(READ_ONLY_ENV) or "").lower() in {"y", "yes"},
        )
        old.close()
        # Connect now, not on first use: a server that refuses or cannot be reached is a typed
        # refusal at open, at once when the server answered (see ``check_connect``).
        self.datastore.check_connect()
        with self.datastore.transaction(commit=False):
            pass
