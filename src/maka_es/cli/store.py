"""Open the store the operator named with ``--store`` (docs/cli.md#global-options; ADR 0029).

Why one function: every command opens its store the same way, read commands read-only on SQLite
(``mode=ro`` makes "planning never writes" a property of the file handle, not of our care), and
a PostgreSQL URL goes to ``RuntimeApplication.open`` (ADR 0028).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from maka_es.app import RuntimeApplication

#: The store used when neither ``--store`` nor ``MAKA_ES_STORE`` names one.
DEFAULT_STORE = "./.maka/runtime.sqlite"
STORE_ENV = "MAKA_ES_STORE"
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(store: str) -> bool:
    return store.startswith(_POSTGRES_SCHEMES)


def open_store(store: str, *, read_only: bool = False, **kwargs: Any) -> RuntimeApplication:
    """The application on ``store``: a SQLite path, or a PostgreSQL URL.

    A writable SQLite open creates the file's directory (``./.maka`` by default) so the first
    ``import`` or ``recover`` just works; a read-only open of a missing file is refused by the
    store itself (``store_path_unusable``) and nothing is created.
    """
    if is_postgres(store):
        # Read commands run in read-only transactions: the server itself refuses any write.
        return RuntimeApplication.open(store, read_only=read_only, **kwargs)
    if not read_only:
        Path(store).parent.mkdir(parents=True, exist_ok=True)
    return RuntimeApplication.open_sqlite(str(Path(store)), read_only=read_only, **kwargs)


def store_from_environment() -> str:
    return os.environ.get(STORE_ENV) or DEFAULT_STORE
