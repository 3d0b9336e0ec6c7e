"""One setting chooses the store: a PostgreSQL URL or a SQLite path (README "PostgreSQL").

Why a URL: hosts, the CLI and the test suite pass one string wherever a store is opened, and
the same string names the same store on every machine. ``postgresql://user:pw@host:port/db``
(or ``postgres://``) becomes eventsourcing's ``POSTGRES_*`` environment for
``maka_es.adapters.postgres``; query parameters ``schema``, ``connect_timeout``, ``pool_size``,
``max_overflow``, ``lock_timeout`` and ``statement_timeout_ms`` map to their settings.
Anything else is a SQLite path (ADR 0028).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from maka_es.errors import StoreUnavailableError

__all__ = ["POSTGRES_MODULE", "is_postgres_url", "postgres_env_from_url", "redact_store_url"]

POSTGRES_MODULE: Final = "maka_es.adapters.postgres"

#: ``y``: every connection's transactions are read-only in the server itself, the PostgreSQL
#: counterpart of SQLite's ``mode=ro`` (``RuntimeApplication.open(url, read_only=True)``).
READ_ONLY_ENV: Final = "MAKA_PG_READ_ONLY"
_SCHEMES: Final = ("postgresql", "postgres")

_QUERY_KEYS: Final = {
    "schema": "POSTGRES_SCHEMA",
    "connect_timeout": "POSTGRES_CONNECT_TIMEOUT",
    "pool_size": "POSTGRES_POOL_SIZE",
    "max_overflow": "POSTGRES_MAX_OVERFLOW",
    "lock_timeout": "POSTGRES_LOCK_TIMEOUT",
    "statement_timeout_ms": "MAKA_PG_STATEMENT_TIMEOUT_MS",
}


def is_postgres_url(store: str) -> bool:
    """Whether ``store`` names a PostgreSQL server (else it is a SQLite path)."""
    return store.partition("://")[0].lower() in _SCHEMES and "://" in store


def redact_store_url(store: str) -> str:
    """``store`` without its password, for messages and logs."""
    if not is_postgres_url(store):
        return store
    parts = urlsplit(store)
    host = parts.hostname or ""
    port = f":{parts.netloc.rpartition(':')[2]}" if ":" in parts.netloc.rpartition("@")[2] else ""
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{port}{parts.path}"


def postgres_env_from_url(store: str) -> dict[str, str]:
    """eventsourcing's environment for the PostgreSQL store at the URL ``store``."""
    try:
        parts = urlsplit(store)
        port = parts.port
    except ValueError as exc:
        raise _bad_url(store, str(exc)) from exc
    dbname = unquote(parts.path.lstrip("/"))
    if not parts.hostname or not dbname or not parts.username:
        raise _bad_url(store, "a host, a user and a database name are required")
    env = {
        "PERSISTENCE_MODULE": POSTGRES_MODULE,
        "POSTGRES_HOST": unquote(parts.hostname),
        "POSTGRES_PORT": str(port or 5432),
        "POSTGRES_USER": unquote(parts.username),
        "POSTGRES_PASSWORD": unquote(parts.password or ""),
        "POSTGRES_DBNAME": dbname,
    }
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key not in _QUERY_KEYS:
            raise _bad_url(store, f"unknown parameter {key!r}")
        env[_QUERY_KEYS[key]] = value
    _require_driver(store)
    return env


def _require_driver(store: str) -> None:
    """psycopg 3 and its pool are the ``postgres`` extra: without them a PostgreSQL store is a
    typed refusal that says what to install, not an ImportError from deep in eventsourcing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise StoreUnavailableError(
            f"cannot open the store {redact_store_url(store)!r}: the PostgreSQL driver is not "
            f"installed ({exc.name}); install maka_es[postgres]",
            detail={"reason": "driver_missing", "store": redact_store_url(store)},
        ) from exc


def _bad_url(store: str, why: str) -> StoreUnavailableError:
    return StoreUnavailableError(
        f"cannot open the store {redact_store_url(store)!r}: {why}",
        detail={"reason": "bad_store_url", "store": redact_store_url(store)},
    )
