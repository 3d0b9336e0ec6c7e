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
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import psycopg
import psycopg_pool
from eventsourcing.persistence import IntegrityError, PersistenceError

from maka_es.errors import MakaError, StoreSchemaMissingError, StoreUnavailableError

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
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return "connection_lost"
    return "error"


def pg_store_fault(exc: BaseException, *, where: str) -> StoreUnavailableError:
    """The typed refusal for a PostgreSQL fault ``exc`` on the server ``where`` (host:port/db,
    never the password)."""
    cause = _psycopg_cause(exc) or exc
    sqlstate = getattr(cause, "sqlstate", None)
    sqlstate = sqlstate if isinstance(sqlstate, str) else None
    reason = _reason(cause, sqlstate)
    detail: dict[str, str] = {"reason": reason, "errorClass": type(cause).__name__}
    if sqlstate is not None:
        detail["sqlstate"] = sqlstate
    detail["server"] = where
    if reason == "schema_missing":
        return StoreSchemaMissingError(
            f"the PostgreSQL database {where} has no maka_es tables ({cause}); nothing was "
            "read or written",
            detail=detail,
        )
    return StoreUnavailableError(
        f"the PostgreSQL store {where} is unavailable ({reason}): {type(cause).__name__}: {cause}",
        detail=detail,
    )


@contextmanager
def typed_pg_faults(where: str) -> Iterator[None]:
    """Re-raise PostgreSQL faults raised inside the block as :class:`StoreUnavailableError`.
    ``IntegrityError`` (either family) and the library's own errors pass through unchanged."""
    try:
        yield
    except (MakaError, IntegrityError, psycopg.IntegrityError):
        raise
    except (psycopg.Error, psycopg_pool.PoolTimeout, PersistenceError) as exc:
        raise pg_store_fault(exc, where=where) from exc
