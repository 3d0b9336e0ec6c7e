"""Open the store the operator named with ``--store`` (docs/cli.md#global-options; ADR 0029).

Why one function: every command opens its store the same way, read commands read-only on SQLite
(``mode=ro`` makes "planning never writes" a property of the file handle, not of our care), and
a PostgreSQL URL goes to ``RuntimeApplication.open`` (ADR 0028). A URL of another scheme is a
usage error (exit 2) before anything is opened or created; ``sqlite:///PATH`` is the file PATH.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from maka_es.adapters.store_url import is_postgres_url, sqlite_path_of
from maka_es.app import RuntimeApplication
from maka_es.errors import CommandLineUsageError, StorePathError

#: The store used when neither ``--store`` nor ``MAKA_ES_STORE`` names one.
DEFAULT_STORE = "./.maka/runtime.sqlite"
STORE_ENV = "MAKA_ES_STORE"


def is_postgres(store: str) -> bool:
    return is_postgres_url(store)


def sqlite_path(store: str) -> str:
    """The SQLite file ``--store`` names (a path, or ``sqlite:///PATH``); any other URL scheme
    is a usage error (exit 2), raised before anything is opened or created."""
    try:
        return sqlite_path_of(store)
    except StorePathError as exc:
        raise CommandLineUsageError(
            str(exc.args[0]),
            "pass --store a SQLite path, sqlite:///PATH or postgresql://user:pw@host:port/db",
        ) from None


def open_store(store: str, *, read_only: bool = False, **kwargs: Any) -> RuntimeApplication:
    """The application on ``store``: a SQLite path, or a PostgreSQL URL.

    A writable SQLite open creates the file's directory (``./.maka`` by default) so the first
    ``import`` or ``recover`` just works; a read-only open of a missing file is refused by the
    store itself (``store_path_unusable``) and nothing is created.
    """
    if is_postgres(store):
        # Read commands run in read-only transactions: the server itself refuses any write.
        return RuntimeApplication.open(store, read_only=read_only, **kwargs)
    path = Path(sqlite_path(store))
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    return RuntimeApplication.open_sqlite(str(path), read_only=read_only, **kwargs)


def store_from_environment() -> str:
    return os.environ.get(STORE_ENV) or DEFAULT_STORE
