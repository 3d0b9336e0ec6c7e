"""One setting chooses the store: a PostgreSQL URL or a SQLite path (docs/configuration.md).

Why a URL: hosts, the CLI and the test suite pass one string wherever a store is opened, and
the same string names the same store on every machine. ``postgresql://user:pw@host:port/db``
(or ``postgres://``) becomes eventsourcing's ``POSTGRES_*`` environment for
``maka_es.adapters.postgres``; query parameters ``schema``, ``connect_timeout``, ``pool_size``,
``max_overflow``, ``lock_timeout`` and ``statement_timeout_ms`` map to their settings.
``sqlite:///PATH`` names the SQLite file ``PATH`` (SQLAlchemy's form: ``sqlite:///rel.db`` is
relative, ``sqlite:////abs/x.db`` absolute); any other ``scheme://`` is refused rather than
taken as a file name; everything else is a SQLite path (ADR 0028, amended).
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

from maka_es.errors import StorePathError, StoreUnavailableError

__all__ = [
    "POSTGRES_MODULE",
    "is_postgres_url",
    "postgres_env_from_url",
    "redact_store_url",
    "sqlite_path_of",
    "store_scheme",
]

POSTGRES_MODULE: Final = "maka_es.adapters.postgres"

#: ``y``: every connection's transactions are read-only in the server itself, the PostgreSQL
#: counterpart of SQLite's ``mode=ro`` (``RuntimeApplication.open(url, read_only=True)``).
READ_ONLY_ENV: Final = "MAKA_PG_READ_ONLY"
_SCHEMES: Final = ("postgresql", "postgres")
_SQLITE_PREFIX: Final = "sqlite:///"
#: RFC 3986's scheme, followed by ``://``: ``C:\\x`` or ``./a:b`` are paths, not URLs.
_URL_SCHEME: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")

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


def store_scheme(store: str) -> str | None:
    """The URL scheme of ``store`` in lower case, ``None`` for a plain SQLite path."""
    match = _URL_SCHEME.match(store)
    return match.group(1).lower() if match else None


def sqlite_path_of(store: str) -> str:
    """The SQLite file a store setting that is no PostgreSQL URL names: a plain path as is,
    ``sqlite:///PATH`` as ``PATH`` (taken literally: no host, no query, no percent-decoding).

    Why a refusal for another scheme: ``mysql://h/db`` taken as a path would create a SQLite
    file ``mysql:/h/db`` (or fail on its missing directory) instead of saying what is wrong.
    ``store_path_unusable`` with ``detail.reason`` ``unsupported_scheme`` or ``bad_sqlite_url``.
    """
    scheme = store_scheme(store)
    if scheme is None:
        return store
    if scheme != "sqlite":
        raise StorePathError(
            f"a store URL with the scheme {scheme!r} is not supported: use a SQLite path, "
            "sqlite:///PATH, or postgresql://user:pw@host:port/db",
            detail={"reason": "unsupported_scheme", "scheme": scheme},
        )
    path = store[len(_SQLITE_PREFIX) :] if store.lower().startswith(_SQLITE_PREFIX) else ""
    if not path or "?" in path:
        raise StorePathError(
            f"{store!r} is no SQLite URL this library reads: write sqlite:///relative.db or "
            "sqlite:////absolute/path.db (no host, no query)",
            detail={"reason": "bad_sqlite_url", "path": store},
        )
    return path


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
