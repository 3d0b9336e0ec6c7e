"""Which recovery-status store belongs with an event store, chosen from the environment.

Why in ``adapters``: the choice depends on the persistence module and the SQLite file name
(the read model lives in the same file as the facts it summarises, so both survive a restart
together); the projector in ``maka_es.recovery.status`` only sees the store's protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from maka_es.adapters.recovery_status_store import (
    InMemoryRecoveryStatusStore,
    RecoveryStatusStore,
    SqliteRecoveryStatusStore,
)
from maka_es.adapters.sqlite import sqlite_path_from_dbname
from maka_es.errors import RecoveryStatusUnsupportedError

__all__ = ["recovery_status_store_for"]

_SQLITE_MODULES: Final = frozenset({"maka_es.adapters.sqlite", "eventsourcing.sqlite"})
_POPO_MODULES: Final = frozenset({"eventsourcing.popo"})
_POSTGRES_MODULES: Final = frozenset({"maka_es.adapters.postgres", "eventsourcing.postgres"})


def recovery_status_store_for(env: Mapping[str, str]) -> RecoveryStatusStore:
    """The read-model store that belongs with the event store configured by ``env``.

    SQLite file → :class:`SqliteRecoveryStatusStore` on the same file (so the rows survive a
    restart together with the facts they summarise); in-memory stores (``eventsourcing.popo``,
    or an SQLite ``:memory:`` database a second connection cannot share) →
    :class:`InMemoryRecoveryStatusStore`, rebuilt by the first catch-up of each process;
    PostgreSQL → :class:`PostgresRecoveryStatusStore` in the same database and schema.
    """
    module = env.get("PERSISTENCE_MODULE") or ""
    if module in _POPO_MODULES:
        return InMemoryRecoveryStatusStore()
    if module in _POSTGRES_MODULES:
        # Imported here: psycopg is the ``postgres`` extra, so a SQLite host never needs it
        # (and ``import maka_es`` does not pay for loading it).
        from maka_es.adapters.recovery_status_postgres import PostgresRecoveryStatusStore

        return PostgresRecoveryStatusStore.from_env(env)
    if module in _SQLITE_MODULES:
        path = sqlite_path_from_dbname(env.get("SQLITE_DBNAME") or "")
        if path is None:
            return InMemoryRecoveryStatusStore()
        return SqliteRecoveryStatusStore(path, busy_timeout_ms=_busy_timeout_ms(env))
    raise RecoveryStatusUnsupportedError(
        f"no recovery-status store for PERSISTENCE_MODULE={module!r}",
        detail={"persistenceModule": module},
    )


def _busy_timeout_ms(env: Mapping[str, str]) -> int:
    """The read model waits for a lock as long as the event store does (``SQLITE_LOCK_TIMEOUT``,
    seconds, validated by eventsourcing when the application was built); 10 s by default."""
    seconds = (env.get("SQLITE_LOCK_TIMEOUT") or "").strip()
    return int(seconds) * 1000 if seconds else 10_000
