"""The session settings every PostgreSQL connection of a store runs under (ADR 0028).

Why per connection, set once when it is made: eventsourcing bounds only its insert transaction
by ``lock_timeout`` (``SET LOCAL``), so every other statement (the first read of a command, the
run snapshots, the recovery-status read model, the notification log) waited without bound
behind a lock another session held. Both the event store's pool and the read model's own
connection run these statements, so no statement of a command escapes the configured bounds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from psycopg import Connection, sql

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
