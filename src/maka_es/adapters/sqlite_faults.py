"""Store faults as the library's own errors: one translation for every SQLite access.

Why here, at the bottom: every read and write of the event store goes through the datastore's
``transaction()`` (see ``maka_es.adapters.sqlite``) and every statement of the
recovery-status read model through its own connection wrapper. Translating at those two choke
points covers every public entry point above them (``RuntimeApplication``, the tool runtime,
the planners, startup recovery) without a ``try``/``except`` in each method, and a new entry
point is covered the day it is written.

What is translated: raw ``sqlite3`` errors and eventsourcing's ``PersistenceError`` family,
except ``IntegrityError`` (a lost race on the store's uniqueness: the application classifies
it as a conflict). Errors that are already ours (``MakaError``) pass through unchanged.

The reason is read from SQLite's own error code (``sqlite_errorname``), not from message text,
except for a missing table, which SQLite reports as a generic ``SQLITE_ERROR``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from eventsourcing.persistence import ConnectionPoolClosedError, IntegrityError, PersistenceError

from maka_es.errors import (
    MakaError,
    StoreFileCorruptionError,
    StorePathError,
    StoreSchemaMissingError,
    StoreUnavailableError,
)

#: SQLite primary error names → the ``reason`` a host reads in ``detail``.
_REASONS: Final = {
    "SQLITE_BUSY": "locked",
    "SQLITE_LOCKED": "locked",
    "SQLITE_FULL": "full",
    "SQLITE_READONLY": "read_only",
    "SQLITE_IOERR": "io_error",
    "SQLITE_CANTOPEN": "cannot_open",
    "SQLITE_CORRUPT": "corrupt",
    "SQLITE_NOTADB": "not_a_database",
    "SQLITE_PERM": "permission_denied",
    "SQLITE_AUTH": "permission_denied",
}


#: Reasons that are a verdict about the file, not a passing fault.
_CORRUPTION: Final = frozenset({"corrupt", "not_a_database"})
#: Reasons the path itself may explain (a directory opened read-only is an I/O error).
_PATH_REASONS: Final = frozenset({"cannot_open", "io_error"})


def _sqlite_cause(exc: BaseException) -> sqlite3.Error | None:
    """The ``sqlite3`` error behind ``exc`` (eventsourcing wraps it as ``__cause__``)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, sqlite3.Error):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _error_name(cause: sqlite3.Error | None) -> str | None:
    name = getattr(cause, "sqlite_errorname", None)
    return name if isinstance(name, str) else None


def _reason(exc: BaseException, error_name: str | None) -> str:
    if isinstance(exc, ConnectionPoolClosedError):
        return "closed"
    if error_name is not None:
        primary = "_".join(error_name.split("_")[:2])  # SQLITE_READONLY_DBMOVED → SQLITE_READONLY
        if primary in _REASONS:
            return _REASONS[primary]
    text = str(exc).lower()
    if "no such table" in text:
        return "schema_missing"
    if "closed database" in text:
        return "closed"
    return "error"


def _path_problem(path: str, read_only: bool) -> str | None:
    """Why nothing can be opened at ``path``, when the filesystem says so (else ``None``)."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return "directory_missing"
    if os.path.isdir(path):
        return "is_a_directory"
    if read_only and not os.path.exists(path):
        return "file_missing"
    return None


def store_fault(
    exc: BaseException, *, path: str | None, read_only: bool = False
) -> StoreUnavailableError:
    """The typed refusal for a store fault ``exc`` on the store at ``path``."""
    cause = _sqlite_cause(exc)
    error_name = _error_name(cause)
    reason = _reason(exc, error_name)
    detail: dict[str, str] = {"reason": reason, "errorClass": type(exc).__name__}
    if error_name is not None:
        detail["sqliteError"] = error_name
    if path is not None:
        detail["path"] = path
    where = f" at {path!r}" if path is not None else ""
    if reason == "schema_missing":
        return StoreSchemaMissingError(
            f"the SQLite database{where} has no maka_es tables ({exc}): a wrong path or a "
            "foreign file, a store opened read-only before anything created its tables, or "
            "tables dropped under the application; nothing was read or written",
            detail=detail,
        )
    if reason in _CORRUPTION:
        return StoreFileCorruptionError(
            f"the store file{where} is damaged or not a SQLite database ({error_name}): "
            f"{exc}; nothing was read or written",
            detail=detail,
        )
    if reason in _PATH_REASONS and path is not None:
        problem = _path_problem(path, read_only)
        if problem is not None:
            detail["reason"] = problem
            return StorePathError(
                f"cannot open or create a SQLite store at {path!r}: "
                f"{problem.replace('_', ' ')} ({exc})",
                detail=detail,
            )
    return StoreUnavailableError(
        f"the store{where} is unavailable ({reason}): {type(exc).__name__}: {exc}",
        detail=detail,
    )


@contextmanager
def typed_store_faults(path: str | None, *, read_only: bool = False) -> Iterator[None]:
    """Re-raise store faults raised inside the block as :class:`StoreUnavailableError` (or a
    subclass). ``IntegrityError`` and the library's own errors pass through unchanged."""
    try:
        yield
    except (MakaError, IntegrityError):
        raise
    except (sqlite3.Error, PersistenceError, ConnectionPoolClosedError) as exc:
        raise store_fault(exc, path=path, read_only=read_only) from exc
