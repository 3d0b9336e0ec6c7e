"""PostgreSQL faults as the library's own errors, like ``sqlite_faults`` for SQLite.

Why one translation at the connection checkout: every read and write of the PostgreSQL event
store (eventsourcing's recorders) and of the recovery-status read model takes its connection
from ``get_connection`` of a datastore (``maka_es.adapters.postgres``); a fault raised by the
driver anywhere inside is typed there once. It also stops eventsourcing's own retries (ten
attempts, 0.2 s apart, on every operational error): a host gets a prompt, typed refusal and
decides itself whether to retry (ADR 0028).

``IntegrityError`` (a lost race on the store's uniqueness) passes through: the application
classifies it as a conflict, exactly as on SQLite. The reason is read from the SQLSTATE class
when the server sent one, else from the kind of failure (refused, dropped, pool closed).

A refusal while connecting carries no SQLSTATE (libpq keeps only the server's message), so
it is read from the server's message: a wrong password or role is ``store_auth_failed`` and a
missing database ``store_database_missing``, permanent configuration errors reported with the
server's reason (the password is never part of a message).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg
import psycopg_pool
from eventsourcing.persistence import IntegrityError, PersistenceError

from maka_es.errors import (
    MakaError,
    StoreAuthFailedError,
    StoreDatabaseMissingError,
    StoreSchemaMissingError,
    StoreUnavailableError,
)

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
